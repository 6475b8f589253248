// Resend's Node SDK imports contacts from a CSV file on mailbridge: contacts.imports
// create (multipart, as the SDK builds it), get (until the runner wrote it) and list.
// Driven by tests/acceptance/test_resend_node_sdk.py (RESEND_BASE_URL, RESEND_API_KEY).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Resend } from 'resend';

const resend = new Resend(process.env.RESEND_API_KEY);

async function finished(id) {
  for (let tries = 0; tries < 600; tries += 1) {
    const { data, error } = await resend.contacts.imports.get(id);
    assert.equal(error, null);
    if (data.status === 'completed' || data.status === 'failed') return data;
    await sleep(100);
  }
  throw new Error(`import ${id} never finished`);
}

test('an import made by the SDK is written, counted and listed', async () => {
  const property = await resend.contactProperties.create({ key: 'tier', type: 'string' });
  assert.equal(property.error, null);
  const segment = await resend.segments.create({ name: 'Imported from CSV' });
  assert.equal(segment.error, null);
  const csv = 'Mail,Given,Level\nann@corp.io,Ann,gold\nbob@corp.io,Bob,\nnot-an-address,X,\n';
  const created = await resend.contacts.imports.create({
    file: new Blob([csv], { type: 'text/csv' }),
    columnMap: { email: 'Mail', firstName: 'Given', properties: { tier: { column: 'Level' } } },
    onConflict: 'upsert',
    segments: [{ id: segment.data.id }],
  });
  assert.equal(created.error, null);
  assert.equal(created.data.object, 'contact_import');

  const done = await finished(created.data.id);
  assert.equal(done.status, 'completed');
  assert.deepEqual(done.counts, { total: 3, created: 2, updated: 0, skipped: 0, failed: 1 });
  assert.ok(done.completed_at);

  const ann = await resend.contacts.get({ email: 'ann@corp.io' });
  assert.equal(ann.data.first_name, 'Ann');
  const listed = await resend.contacts.imports.list({ status: 'completed' });
  assert.deepEqual(listed.data.data.map((item) => item.id), [created.data.id]);
});

test('a file without an email column is refused with the error envelope', async () => {
  const refused = await resend.contacts.imports.create({
    file: new Blob(['name\nann\n'], { type: 'text/csv' }),
  });
  assert.equal(refused.data, null);
  assert.equal(refused.error.statusCode, 422);
  assert.equal(refused.error.name, 'validation_error');
});
