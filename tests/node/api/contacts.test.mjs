// Contacts, their properties, topics and segments through Resend's Node SDK.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ok, refused, resend, unique } from './helpers.mjs';

test('contact properties: create, list, get, update, remove', async () => {
  const key = unique('tier').replaceAll('-', '_');
  const created = ok(await resend.contactProperties.create({ key, type: 'string', fallbackValue: 'free' }));
  assert.equal(created.object, 'contact_property');
  const listed = ok(await resend.contactProperties.list());
  assert.ok(listed.data.some((item) => item.id === created.id));
  const one = ok(await resend.contactProperties.get(created.id));
  assert.equal(one.key, key);
  assert.equal(one.fallbackValue, 'free'); // the SDK's own camelCase
  ok(await resend.contactProperties.update({ id: created.id, fallbackValue: 'basic' }));
  assert.equal(ok(await resend.contactProperties.get(created.id)).fallbackValue, 'basic');
  const removed = ok(await resend.contactProperties.remove(created.id));
  assert.equal(removed.deleted, true);
  refused(await resend.contactProperties.get(created.id), 404, 'not_found');
});

test('contacts: create, get by id and email, list, update, remove', async () => {
  const email = `${unique('ann')}@corp.io`;
  const created = ok(await resend.contacts.create({ email, firstName: 'Ann' }));
  assert.equal(created.object, 'contact');
  const byId = ok(await resend.contacts.get(created.id));
  assert.equal(byId.email, email);
  const byEmail = ok(await resend.contacts.get({ email }));
  assert.equal(byEmail.id, created.id);
  const listed = ok(await resend.contacts.list());
  assert.ok(listed.data.some((item) => item.id === created.id));
  ok(await resend.contacts.update({ id: created.id, lastName: 'Lee', unsubscribed: true }));
  const changed = ok(await resend.contacts.get({ id: created.id }));
  assert.equal(changed.last_name, 'Lee');
  assert.equal(changed.unsubscribed, true);
  refused(await resend.contacts.create({ email }), 409, 'contact_exists');
  const removed = ok(await resend.contacts.remove({ email }));
  assert.equal(removed.deleted, true);
  refused(await resend.contacts.get(created.id), 404, 'not_found');
});

test('topics, and a contact opting in and out of them', async () => {
  const topic = ok(await resend.topics.create({ name: unique('News'), defaultSubscription: 'opt_in' }));
  const one = ok(await resend.topics.get(topic.id));
  assert.equal(one.default_subscription, 'opt_in');
  ok(await resend.topics.update({ id: topic.id, description: 'Monthly' }));
  assert.equal(ok(await resend.topics.get(topic.id)).description, 'Monthly');
  assert.ok(ok(await resend.topics.list()).data.some((item) => item.id === topic.id));

  const contact = ok(await resend.contacts.create({ email: `${unique('bob')}@corp.io` }));
  ok(await resend.contacts.topics.update({ id: contact.id, topics: [{ id: topic.id, subscription: 'opt_out' }] }));
  const choices = ok(await resend.contacts.topics.list({ id: contact.id }));
  assert.equal(choices.data.find((item) => item.id === topic.id).subscription, 'opt_out');
  assert.equal(ok(await resend.topics.remove(topic.id)).deleted, true);
});

test('segments, and a contact added to and taken out of one', async () => {
  const segment = ok(await resend.segments.create({ name: unique('VIP') }));
  assert.equal(segment.object, 'segment');
  assert.equal(ok(await resend.segments.get(segment.id)).name.startsWith('VIP'), true);
  assert.ok(ok(await resend.segments.list()).data.some((item) => item.id === segment.id));
  ok(await resend.segments.update(segment.id, { name: 'Very important' }));
  assert.equal(ok(await resend.segments.get(segment.id)).name, 'Very important');

  const contact = ok(await resend.contacts.create({ email: `${unique('cy')}@corp.io` }));
  ok(await resend.contacts.segments.add({ contactId: contact.id, segmentId: segment.id }));
  const mine = ok(await resend.contacts.segments.list({ contactId: contact.id }));
  assert.deepEqual(mine.data.map((item) => item.id), [segment.id]);
  ok(await resend.contacts.segments.remove({ contactId: contact.id, segmentId: segment.id }));
  assert.deepEqual(ok(await resend.contacts.segments.list({ contactId: contact.id })).data, []);
  assert.equal(ok(await resend.segments.remove(segment.id)).deleted, true);
});
