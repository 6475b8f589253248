// Domains (and claiming one another team verified), API keys, the request log, usage and
// suppressions through Resend's Node SDK.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ok, refused, resend, unique } from './helpers.mjs';

test('domains: create, get, list, update, verify, remove', async () => {
  const name = `${unique('mail')}.example.org`;
  const created = ok(await resend.domains.create({ name, openTracking: true }));
  assert.equal(created.name, name);
  assert.ok(Array.isArray(created.records));
  const one = ok(await resend.domains.get(created.id));
  assert.equal(one.object, 'domain');
  assert.ok(one.capabilities);
  assert.ok(ok(await resend.domains.list()).data.some((item) => item.id === created.id));
  ok(await resend.domains.update({ id: created.id, clickTracking: true }));
  assert.equal(ok(await resend.domains.get(created.id)).click_tracking, true);
  const checked = ok(await resend.domains.verify(created.id));
  assert.equal(checked.id, created.id);
  assert.equal(ok(await resend.domains.remove(created.id)).deleted, true);
  refused(await resend.domains.get(created.id), 404, 'not_found');
});

test('a domain another team verified is claimed, pending until its record is published', async () => {
  const held = process.env.HELD_DOMAIN;
  refused(await resend.domains.create({ name: held }), 409, 'domain_conflict');
  const claim = ok(await resend.domains.claims.create({ name: held }));
  assert.equal(claim.object, 'domain_claim');
  assert.equal(claim.status, 'pending');
  assert.ok(claim.record.name && claim.record.value);
  assert.equal(ok(await resend.domains.claims.get(claim.domain_id)).id, claim.id);
  assert.equal(ok(await resend.domains.claims.verify(claim.domain_id)).status, 'pending');
});

test('API keys are listed; making, renaming and removing one is the dashboard\'s', async () => {
  const [key] = ok(await resend.apiKeys.list()).data;
  assert.ok(key.id);
  refused(await resend.apiKeys.create({ name: 'deploy' }), 403, 'dashboard_only');
  refused(await resend.apiKeys.update(key.id, { name: 'renamed' }), 403, 'dashboard_only');
  refused(await resend.apiKeys.remove(key.id), 403, 'dashboard_only');
});

test('the request log and the usage', async () => {
  ok(await resend.domains.list());
  const logs = ok(await resend.logs.list({ limit: 20 }));
  assert.ok(logs.data.length > 0);
  const one = ok(await resend.logs.get(logs.data[0].id));
  assert.equal(one.id, logs.data[0].id);
  const usage = ok(await resend.usage.get());
  assert.equal(usage.object, 'usage');
});

test('suppressions: add, get, list, remove, and in batches', async () => {
  const email = `${unique('gone')}@corp.io`;
  const added = ok(await resend.suppressions.add({ email }));
  assert.equal(added.object, 'suppression');
  assert.equal(ok(await resend.suppressions.get(email)).id, added.id);
  assert.ok(ok(await resend.suppressions.list()).data.some((item) => item.id === added.id));
  ok(await resend.suppressions.remove(added.id));
  refused(await resend.suppressions.get(added.id), 404, 'not_found');
  const emails = [`${unique('a')}@corp.io`, `${unique('b')}@corp.io`];
  assert.equal(ok(await resend.suppressions.batch.add({ emails })).data.length, 2);
  assert.equal(ok(await resend.suppressions.batch.remove({ emails })).data.length, 2);
});
