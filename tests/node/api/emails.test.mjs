// Resend's Node SDK shares an email and reads email metrics on mailbridge: emails.share
// (the link opens the email for anyone who holds it) and emails.metrics (totals, rows by
// period). Driven by tests/acceptance/test_resend_node_sdk.py.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Resend } from 'resend';

const resend = new Resend(process.env.RESEND_API_KEY);

test('a sent email is shared by a link that opens without a key', async () => {
  const sent = await resend.emails.send({
    from: 'Shop <news@shop.io>', to: ['ann@corp.io'], subject: 'Shared', html: '<p>Look</p>',
  });
  assert.equal(sent.error, null);
  const shared = await resend.emails.share(sent.data.id, { expiresIn: '2 hours' });
  assert.equal(shared.error, null);
  assert.equal(shared.data.object, 'email');
  const page = await fetch(process.env.RESEND_BASE_URL + new URL(shared.data.url).pathname);
  assert.equal(page.status, 200);
  assert.match(await page.text(), /Look/);
  const wrong = await resend.emails.share(sent.data.id, { expiresIn: 'whenever' });
  assert.equal(wrong.error.statusCode, 422);
});

test('metrics answer totals and a row a period', async () => {
  const { data, error } = await resend.emails.metrics({
    metrics: ['sent', 'open_rate'], dimensions: ['period'], granularity: 'daily',
  });
  assert.equal(error, null);
  assert.equal(data.object, 'metrics');
  assert.deepEqual(data.metrics, ['sent', 'open_rate']);
  assert.equal(data.data.length, 7);
  assert.ok('sent' in data.totals && 'open_rate' in data.totals);
  const refused = await resend.emails.metrics({ granularity: 'yearly' });
  assert.equal(refused.error.statusCode, 422);
});
