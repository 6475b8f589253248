// Every public method of Resend's Node SDK is called by a test in this folder — found by
// walking a client object, so a method a new SDK version adds fails this run until a test
// calls it — except what mailbridge leaves out on purpose, each with its reason (and a
// test that it answers 404). Private helpers (declared `private` in the SDK's own
// index.d.mts) and the fetch Headers object are not methods of the API.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Resend } from 'resend';

const here = dirname(fileURLToPath(import.meta.url));
// Deliberate differences, each a rule of mailbridge's spec; the methods are called all the
// same, and their tests assert the difference.
export const DIFFERENCES = {
  'apiKeys.create, apiKeys.update, apiKeys.remove': '403 dashboard_only: keys are made, renamed and revoked in the dashboard or by `mailbridge admin keys` (spec §5.4)',
  'webhooks.get, webhooks.list': 'no signing_secret: it is shown once, in the answer that made it (create, rotateSigningSecret) (spec §4.10)',
};
const LEFT_OUT = {
  'oauthGrants.': 'OAuth grants: mailbridge has API keys and member sessions, no OAuth applications',
};

function declaredPrivate() {
  const entry = createRequire(import.meta.url).resolve('resend');
  const types = readFileSync(join(dirname(entry), 'index.d.mts'), 'utf8');
  return new Set([...types.matchAll(/^\s+private (\w+)/gm)].map((match) => match[1]));
}

export function sdkMethods() {
  const hidden = declaredPrivate();
  const found = [];
  const walk = (object, path, seen) => {
    for (const key of Object.keys(object)) {
      const value = object[key];
      if (key === 'resend' || !value || typeof value !== 'object' || seen.has(value)) continue;
      if (value instanceof Headers || value.constructor === Object || Array.isArray(value)) continue;
      seen.add(value);
      const prototype = Object.getPrototypeOf(value);
      for (const name of Object.getOwnPropertyNames(prototype)) {
        if (name === 'constructor' || hidden.has(name) || typeof prototype[name] !== 'function') continue;
        found.push(`${path}${key}.${name}`);
      }
      walk(value, `${path}${key}.`, seen);
    }
  };
  const client = new Resend('re_unused');
  walk(client, '', new Set([client]));
  return found;
}

test('every method of the SDK is called by a test here', () => {
  const sources = readdirSync(here)
    .filter((name) => name.endsWith('.test.mjs'))
    .map((name) => readFileSync(join(here, name), 'utf8'))
    .join('\n');
  const methods = sdkMethods();
  assert.ok(methods.length >= 130, `the SDK's surface was found: ${methods.length}`);
  const leftOut = methods.filter((name) => Object.keys(LEFT_OUT).some((prefix) => name.startsWith(prefix)));
  const missing = methods.filter(
    (name) => !leftOut.includes(name) && !sources.includes(`resend.${name}(`),
  );
  assert.deepEqual(missing, [], `SDK methods no test calls: ${missing.join(', ')}`);
  console.log(`${methods.length} SDK methods, ${methods.length - leftOut.length} called, ${leftOut.length} left out`);
});

test('what is left out answers 404', async () => {
  const resend = new Resend(process.env.RESEND_API_KEY);
  const { data, error } = await resend.oauthGrants.list();
  assert.equal(data, null);
  assert.equal(error.statusCode, 404);
});
