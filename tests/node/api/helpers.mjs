// Shared by the SDK tests of this folder: the client (RESEND_BASE_URL and RESEND_API_KEY
// from the driver, tests/acceptance/test_resend_node_sdk.py), and small waits.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Resend } from 'resend';

export const resend = new Resend(process.env.RESEND_API_KEY);

/** The data of an SDK answer that must have succeeded. */
export function ok(answer) {
  assert.equal(answer.error, null, JSON.stringify(answer.error));
  return answer.data;
}

/** The error of an SDK answer that must have failed with `status` (and `name`). */
export function refused(answer, status, name) {
  assert.equal(answer.data, null);
  assert.equal(answer.error.statusCode, status, JSON.stringify(answer.error));
  if (name) assert.equal(answer.error.name, name);
  return answer.error;
}

/** Polls `look` until it returns something truthy (60 s at most). */
export async function until(look, what) {
  for (let tries = 0; tries < 600; tries += 1) {
    const found = await look();
    if (found) return found;
    await sleep(100);
  }
  throw new Error(`never: ${what}`);
}

export const unique = (prefix) => `${prefix}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;

/** A message with an attachment to `to` (hi@shop.io), over SMTP to serve's listener. */
export async function sendToListener(subject, { to = 'hi@shop.io', from = 'ann@corp.io', headers = [] } = {}) {
  const [host, port] = process.env.MAILBRIDGE_INBOUND_SMTP.split(':');
  const { createConnection } = await import('node:net');
  const boundary = 'b1';
  const message = [
    `From: ${from}`, `To: ${to}`, `Subject: ${subject}`, ...headers, 'MIME-Version: 1.0',
    `Content-Type: multipart/mixed; boundary="${boundary}"`, '',
    `--${boundary}`, 'Content-Type: text/plain', '', 'Here it is.',
    `--${boundary}`, 'Content-Type: text/plain; name="quote.txt"',
    'Content-Disposition: attachment; filename="quote.txt"', '', '42 apples',
    `--${boundary}--`, '',
  ].join('\r\n');
  const script = ['EHLO node.test', `MAIL FROM:<${from}>`, `RCPT TO:<${to}>`, 'DATA', `${message}\r\n.`, 'QUIT'];
  await new Promise((resolve, reject) => {
    const socket = createConnection({ host, port: Number(port) });
    let buffer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => {
      buffer += chunk;
      const lines = buffer.split('\r\n');
      buffer = lines.pop();
      for (const line of lines) {
        if (/^\d{3} /.test(line)) {
          if (/^[45]/.test(line)) reject(new Error(line));
          const next = script.shift();
          if (next !== undefined) socket.write(`${next}\r\n`);
        }
      }
    });
    socket.on('close', resolve);
    socket.on('error', reject);
  });
}
