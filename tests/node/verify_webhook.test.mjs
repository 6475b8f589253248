// Resend's Node SDK verifies a delivery mailbridge made: `webhooks.verify` with the
// secret(s) that should pass, and refuses one that should not. The delivery (raw body
// and headers, as a plain HTTP server received them) comes from the acceptance test
// that drives this file: tests/acceptance/test_webhook_verifiers.py.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Resend } from 'resend';

const delivery = JSON.parse(readFileSync(process.env.MAILBRIDGE_DELIVERY, 'utf8'));
const resend = new Resend('re_unused');
const headers = {
  id: delivery.headers['webhook-id'],
  timestamp: delivery.headers['webhook-timestamp'],
  signature: delivery.headers['webhook-signature'],
};

test('the SDK verifies the delivery with each secret that signed it', () => {
  for (const secret of delivery.valid) {
    const event = resend.webhooks.verify({ payload: delivery.body, headers, webhookSecret: secret });
    assert.equal(event.type, delivery.type);
  }
});

test('the SDK refuses a secret that did not sign it', () => {
  assert.throws(() =>
    resend.webhooks.verify({ payload: delivery.body, headers, webhookSecret: delivery.invalid }),
  );
});

test('the SDK refuses a changed body', () => {
  const payload = delivery.body.replace('"type"', ' "type"');
  assert.throws(() =>
    resend.webhooks.verify({ payload, headers, webhookSecret: delivery.valid[0] }),
  );
});
