// Sending and reading email, batches, attachments and templates through Resend's Node SDK
// (the team sends from the verified shop.io the driver set up).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ok, refused, resend, sendToListener, unique, until } from './helpers.mjs';

const FROM = 'Shop <news@shop.io>';

test('emails: send, create, get, list, reschedule, cancel, attachments', async () => {
  const sent = ok(await resend.emails.send({
    from: FROM, to: ['ann@corp.io'], subject: 'Hello', html: '<p>Hi</p>',
    attachments: [{ filename: 'note.txt', content: Buffer.from('a note').toString('base64') }],
  }));
  const one = ok(await resend.emails.get(sent.id));
  assert.equal(one.object, 'email');
  assert.deepEqual(one.to, ['ann@corp.io']);
  assert.ok(ok(await resend.emails.list()).data.some((item) => item.id === sent.id));
  const [attachment] = ok(await resend.emails.attachments.list({ emailId: sent.id })).data;
  assert.equal(attachment.filename, 'note.txt');
  const file = ok(await resend.emails.attachments.get({ emailId: sent.id, id: attachment.id }));
  assert.ok(file.download_url);

  const later = ok(await resend.emails.create({
    from: FROM, to: ['bob@corp.io'], subject: 'Later', text: 'Soon', scheduledAt: 'in 1 hour',
  }));
  ok(await resend.emails.update({ id: later.id, scheduledAt: 'in 2 days' }));
  assert.equal(ok(await resend.emails.get(later.id)).last_event, 'scheduled');
  ok(await resend.emails.cancel(later.id));
  assert.equal(ok(await resend.emails.get(later.id)).last_event, 'canceled');
  refused(await resend.emails.send({ from: 'x@elsewhere.example', to: ['a@corp.io'], subject: 'x', text: 'x' }), 422);
});

test('batches: send and create, with an idempotency key', async () => {
  const key = unique('batch');
  const items = [
    { from: FROM, to: ['ann@corp.io'], subject: 'One', text: 'One' },
    { from: FROM, to: ['bob@corp.io'], subject: 'Two', text: 'Two' },
  ];
  const first = ok(await resend.batch.send(items, { idempotencyKey: key }));
  assert.equal(first.data.length, 2);
  const again = ok(await resend.batch.create(items, { idempotencyKey: key }));
  assert.deepEqual(again.data.map((item) => item.id), first.data.map((item) => item.id));
});

test('templates: create, publish, get, list, update, duplicate, remove', async () => {
  const alias = unique('welcome');
  const created = ok(await resend.templates.create({
    name: 'Welcome', alias, from: FROM, subject: 'Welcome', html: '<p>Hi {{{contact.first_name|there}}}</p>',
  }));
  assert.equal(created.object, 'template');
  ok(await resend.templates.publish(created.id));
  const one = ok(await resend.templates.get(alias));
  assert.equal(one.id, created.id);
  assert.ok(ok(await resend.templates.list()).data.some((item) => item.id === created.id));
  ok(await resend.templates.update(created.id, { subject: 'Welcome aboard' }));
  assert.equal(ok(await resend.templates.get(created.id)).subject, 'Welcome aboard');
  const copy = ok(await resend.templates.duplicate(created.id));
  assert.notEqual(copy.id, created.id);
  const sent = ok(await resend.emails.send({ to: ['ann@corp.io'], template: { id: alias } }));
  assert.equal(ok(await resend.emails.get(sent.id)).subject, 'Welcome');
  assert.equal(ok(await resend.templates.remove(copy.id)).deleted, true);
  refused(await resend.templates.get(copy.id), 404, 'not_found');
});

test('received mail: list, get, attachments, and forwarding it both ways', async () => {
  const subject = unique('Quote');
  await sendToListener(subject);
  const listed = await until(async () => ok(await resend.emails.receiving.list()).data.find((item) => item.subject === subject), 'the received email');
  const one = ok(await resend.emails.receiving.get(listed.id));
  assert.match(one.text, /Here it is/);
  const [attachment] = ok(await resend.emails.receiving.attachments.list({ emailId: listed.id })).data;
  assert.equal(attachment.filename, 'quote.txt');
  const file = ok(await resend.emails.receiving.attachments.get({ emailId: listed.id, id: attachment.id }));
  assert.ok(file.download_url);
  const passed = ok(await resend.emails.receiving.forward({ emailId: listed.id, to: 'team@corp.io', from: FROM }));
  const wrapped = ok(await resend.emails.receiving.forward({
    emailId: listed.id, to: 'team@corp.io', from: FROM, passthrough: false, text: 'See below',
  }));
  assert.match(ok(await resend.emails.get(wrapped.id)).subject, /^Fwd: /);
  assert.equal(ok(await resend.emails.get(passed.id)).subject, subject);
});

