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
