// Broadcasts, automations and their runs, event definitions and events, webhooks with
// their events and attempts, through Resend's Node SDK.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { test } from 'node:test';
import { ok, refused, resend, unique, until } from './helpers.mjs';

const FROM = 'Shop <news@shop.io>';

test('broadcasts: create, get, list, update, send, recipients, clicked links, duplicate, cancel, remove', async () => {
  const segment = ok(await resend.segments.create({ name: unique('Readers') }));
  const reader = ok(await resend.contacts.create({ email: `${unique('reader')}@corp.io` }));
  ok(await resend.contacts.segments.add({ contactId: reader.id, segmentId: segment.id }));
  const created = ok(await resend.broadcasts.create({
    segmentId: segment.id, from: FROM, subject: 'News', html: '<p>News</p>', name: 'November',
  }));
  const draft = ok(await resend.broadcasts.get(created.id));
  assert.equal(draft.status, 'draft');
  assert.ok(ok(await resend.broadcasts.list()).data.some((item) => item.id === created.id));
  ok(await resend.broadcasts.update(created.id, { subject: 'Big news' }));
  assert.equal(ok(await resend.broadcasts.get(created.id)).subject, 'Big news');
  const copy = ok(await resend.broadcasts.duplicate(created.id));
  assert.notEqual(copy.id, created.id);

  ok(await resend.broadcasts.send(created.id));
  const sent = await until(async () => {
    const found = ok(await resend.broadcasts.recipients(created.id, { type: 'sent' })).data;
    return found.length === 1 && found;
  }, 'the broadcast sent');
  assert.equal(sent[0].email, reader.email ?? sent[0].email);
  assert.deepEqual(ok(await resend.broadcasts.clickedLinks(created.id)).data, []);

  ok(await resend.broadcasts.send(copy.id, { scheduledAt: 'in 2 days' }));
  ok(await resend.broadcasts.cancel(copy.id));
  assert.notEqual(ok(await resend.broadcasts.get(copy.id)).status, 'scheduled');
  assert.equal(ok(await resend.broadcasts.remove(copy.id)).deleted, true);
});

test('event definitions: create, get, list, update, remove', async () => {
  const name = unique('order.paid');
  const created = ok(await resend.events.create({ name, schema: { amount: 'number' } }));
  assert.equal(created.object, 'event');
  assert.deepEqual(ok(await resend.events.get(name)).schema, { amount: 'number' });
  assert.ok(ok(await resend.events.list()).data.some((item) => item.id === created.id));
  ok(await resend.events.update(name, { schema: { total: 'string' } }));
  assert.deepEqual(ok(await resend.events.get(created.id)).schema, { total: 'string' });
  assert.equal(ok(await resend.events.remove(name)).deleted, true);
  refused(await resend.events.get(name), 404, 'not_found');
});

test('automations: create, get, list, update, an event starting a run, its runs, duplicate, stop, remove', async () => {
  const alias = unique('hello');
  const template = ok(await resend.templates.create({ name: 'Hello', alias, from: FROM, subject: 'Hello', html: '<p>Hello</p>' }));
  ok(await resend.templates.publish(template.id));
  const event = unique('user.signed_up');
  const created = ok(await resend.automations.create({
    name: 'Onboarding', status: 'enabled',
    steps: [
      { key: 'start', type: 'trigger', config: { eventName: event } },
      { key: 'hello', type: 'send_email', config: { template: { id: alias } } },
      { key: 'pause', type: 'delay', config: { duration: '2 days' } },
    ],
    connections: [{ from: 'start', to: 'hello' }, { from: 'hello', to: 'pause' }],
  }));
  const one = ok(await resend.automations.get(created.id));
  assert.equal(one.status, 'enabled');
  assert.ok(ok(await resend.automations.list({ status: 'enabled' })).data.some((item) => item.id === created.id));
  ok(await resend.automations.update(created.id, { name: 'Renamed' }));
  assert.equal(ok(await resend.automations.get(created.id)).name, 'Renamed');

  ok(await resend.events.send({ event, email: `${unique('new')}@corp.io`, payload: { plan: 'pro' } }));
  const [run] = await until(async () => {
    const runs = ok(await resend.automations.runs.list({ automationId: created.id, status: ['running', 'completed'] })).data;
    return runs.length && runs;
  }, 'a run');
  const detail = ok(await resend.automations.runs.get({ automationId: created.id, runId: run.id }));
  assert.equal(detail.id, run.id);
  assert.ok(detail.started_at);

  const copy = ok(await resend.automations.duplicate(created.id));
  assert.equal(ok(await resend.automations.get(copy.id)).status, 'disabled');
  ok(await resend.automations.stop(created.id));
  assert.equal(ok(await resend.automations.remove(copy.id)).deleted, true);
});

test('webhooks: create, get, list, update, deliveries as events with attempts, replay, rotate, verify', async () => {
  const received = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => { body += chunk; });
    request.on('end', () => { received.push({ headers: request.headers, body }); response.end('ok'); });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const endpoint = `http://127.0.0.1:${server.address().port}/hook`;
    const created = ok(await resend.webhooks.create({ endpoint, events: ['contact.created'] }));
    assert.match(created.signing_secret, /^whsec_/);
    const shown = ok(await resend.webhooks.get(created.id));
    assert.equal(shown.endpoint, endpoint);
    assert.equal(shown.signing_secret, undefined); // shown once, at creation (spec §4.10)
    const listed = ok(await resend.webhooks.list()).data.find((item) => item.id === created.id);
    assert.equal(listed.signing_secret, undefined);
    ok(await resend.webhooks.update(created.id, { endpoint, events: ['contact.created', 'contact.updated'] }));

    ok(await resend.contacts.create({ email: `${unique('hooked')}@corp.io` }));
    const delivery = await until(() => received[0], 'a delivery');
    const verified = resend.webhooks.verify({
      payload: delivery.body,
      headers: {
        id: delivery.headers['webhook-id'],
        timestamp: delivery.headers['webhook-timestamp'],
        signature: delivery.headers['webhook-signature'],
      },
      webhookSecret: created.signing_secret,
    });
    assert.equal(verified.type, 'contact.created');

    const [event] = await until(async () => ok(await resend.webhooks.events.list({ webhookId: created.id })).data, 'the event listed');
    assert.equal(ok(await resend.webhooks.events.get({ webhookId: created.id, eventId: event.id })).id, event.id);
    const attempts = ok(await resend.webhooks.events.attempts.list({ webhookId: created.id, eventId: event.id }));
    assert.ok(attempts.data.length >= 1);
    ok(await resend.webhooks.events.replay({ webhookId: created.id, eventId: event.id }));
    await until(() => received.length >= 2, 'the replay delivered');

    const rotated = ok(await resend.webhooks.rotateSigningSecret(created.id));
    assert.notEqual(rotated.signing_secret, created.signing_secret);
    assert.equal(ok(await resend.webhooks.remove(created.id)).deleted, true);
  } finally {
    server.close();
  }
});
