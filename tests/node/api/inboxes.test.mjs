// Inboxes through the official SDK: an inbox on the receiving domain, mail to it filed
// into threads, folders, read marks and labels — addressed by id and by email address.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ok, refused, resend, sendToListener, unique, until } from './helpers.mjs';

test('an inbox, its threads, messages and labels', async () => {
  const address = `${unique('support')}@shop.io`;
  const created = ok(await resend.inboxes.create({ emailAddress: address, name: 'Support' }));
  assert.equal(created.object, 'inbox');
  refused(await resend.inboxes.create({ emailAddress: `${unique('x')}@elsewhere.io` }), 422);
  const byAddress = { emailAddress: address };
  const byId = { inboxId: created.id };
  assert.equal(ok(await resend.inboxes.get(address)).id, created.id);
  ok(await resend.inboxes.update(created.id, { fromName: 'Shop Support' }));
  assert.equal(ok(await resend.inboxes.get(created.id)).from_name, 'Shop Support');
  assert.ok(ok(await resend.inboxes.list()).data.some((inbox) => inbox.id === created.id));

  const subject = unique('Where is my order');
  await sendToListener(subject, { to: address, headers: [`Message-ID: <${subject}@corp.io>`] });
  await sendToListener(`Re: ${subject}`, { to: address, headers: [`In-Reply-To: <${subject}@corp.io>`] });
  const thread = await until(async () => {
    const listed = ok(await resend.inboxes.threads.list({ ...byAddress, folders: ['inbox'] })).data;
    return listed.find((each) => each.subject === subject && each.email_count === 2);
  }, 'both messages in one thread');
  assert.equal(thread.read, false);
  assert.equal(thread.has_attachment, true);
  assert.equal(ok(await resend.inboxes.get(address)).unread, 1);

  const messages = ok(await resend.inboxes.threads.emails.list({ ...byId, threadId: thread.id })).data;
  assert.deepEqual(messages.map((each) => each.subject).sort(), [subject, `Re: ${subject}`].sort());
  const first = ok(await resend.inboxes.threads.emails.get({ ...byId, threadId: thread.id, emailId: messages[0].id }));
  assert.equal(first.direction, 'inbound');
  assert.equal(first.attachments[0].filename, 'quote.txt');

  const [hit] = ok(await resend.inboxes.threads.search({ ...byId, query: subject.split('-')[1], folders: ['inbox'] })).data;
  assert.equal(hit.id, thread.id);
  assert.ok(hit.matched_email_id);

  const reply = ok(await resend.inboxes.threads.emails.reply({
    ...byId, threadId: thread.id, emailId: first.id, text: 'On its way.', replyAll: true,
  }));
  const sent = await until(async () => {
    const all = ok(await resend.inboxes.threads.emails.list({ ...byId, threadId: thread.id })).data;
    return all.find((each) => each.id === reply.id);
  }, 'the reply in the thread once it went out');
  assert.equal(sent.direction, 'outbound');
  assert.match(sent.subject, /^Re: /);
  const forwarded = ok(await resend.inboxes.threads.emails.forward({
    ...byAddress, threadId: thread.id, emailId: first.id, to: 'team@corp.io', text: 'FYI',
  }));
  assert.match(ok(await resend.emails.get(forwarded.id)).subject, /^Fwd: /);
  refused(await resend.inboxes.threads.emails.reply({
    ...byId, threadId: thread.id, emailId: first.id, text: 'x', headers: { 'In-Reply-To': '<x@y>' },
  }), 422);

  const draft = ok(await resend.inboxes.drafts.create({
    ...byId, to: 'bo@corp.io', subject: 'Your invoice', text: 'Attached.',
    attachments: [{ filename: 'inv.txt', content: Buffer.from('invoice 42'), contentType: 'text/plain' }],
  }, { idempotencyKey: unique('draft') }));
  assert.equal(draft.object, 'inbox_draft');
  ok(await resend.inboxes.drafts.update({ ...byId, draftId: draft.id, cc: ['cy@corp.io'] }));
  const written = ok(await resend.inboxes.drafts.get({ ...byAddress, draftId: draft.id }));
  assert.deepEqual([written.type, written.cc, written.attachments[0].size], ['standalone', ['cy@corp.io'], 10]);
  assert.ok(ok(await resend.inboxes.drafts.list(byId)).data.some((each) => each.id === draft.id));
  const replyDraft = ok(await resend.inboxes.drafts.create({
    ...byId, threadId: thread.id, replyToEmailId: first.id, text: 'Drafted reply.',
  }));
  ok(await resend.inboxes.drafts.remove({ ...byId, draftId: replyDraft.id }));
  const delivered = ok(await resend.inboxes.drafts.send({ ...byId, draftId: draft.id, headers: { 'X-Ticket': '42' } }, { idempotencyKey: unique('send') }));
  assert.equal(ok(await resend.inboxes.drafts.get({ ...byId, draftId: draft.id })).email_id, delivered.id);

  const urgent = ok(await resend.inboxes.labels.create({ ...byAddress, name: 'Urgent', color: '#E93D82' }));
  const billing = ok(await resend.inboxes.labels.create({ ...byId, name: 'Billing' }));
  ok(await resend.inboxes.labels.update({ ...byId, labelId: billing.id, color: '#00AA00' }));
  const labels = ok(await resend.inboxes.labels.list(byId)).data;
  assert.deepEqual(labels.map((each) => [each.name, each.color]), [['Billing', '#00AA00'], ['Urgent', '#E93D82']]);
  const added = ok(await resend.inboxes.threads.labels.add({ ...byId, threadId: thread.id, labels: [urgent.id] }));
  assert.deepEqual(added.data.map((each) => each.name), ['Urgent']);
  const set = ok(await resend.inboxes.threads.labels.set({ ...byId, threadId: thread.id, labels: [billing.id, urgent.id] }));
  assert.deepEqual(set.data.map((each) => each.name), ['Billing', 'Urgent']);
  const left = ok(await resend.inboxes.threads.labels.remove({ ...byId, threadId: thread.id, labelId: urgent.id }));
  assert.deepEqual(left.data.map((each) => each.name), ['Billing']);
  ok(await resend.inboxes.labels.remove({ ...byId, labelId: urgent.id }));

  const read = ok(await resend.inboxes.threads.update({ ...byId, threadId: thread.id, read: true, folder: 'archive' }));
  assert.equal(read.read, true);
  assert.equal(read.folder, 'archive');
  const got = ok(await resend.inboxes.threads.get({ ...byAddress, threadId: thread.id }));
  assert.deepEqual(got.labels.map((each) => each.name), ['Billing']);
  ok(await resend.inboxes.threads.remove({ ...byId, threadId: thread.id }));
  assert.equal(ok(await resend.inboxes.threads.get({ ...byId, threadId: thread.id })).folder, 'trash');

  ok(await resend.inboxes.agent.update({ ...byAddress, instructions: 'Be kind.', tone: 'concise_casual', actions: ['draft_reply'] }));
  const agent = ok(await resend.inboxes.agent.get(byId));
  assert.equal(agent.object, 'inbox_agent');
  assert.deepEqual([agent.instructions, agent.tone, agent.actions], ['Be kind.', 'concise_casual', ['draft_reply']]);
  refused(await resend.inboxes.agent.update({ ...byId, tone: 'shouty' }), 422);

  const removed = ok(await resend.inboxes.remove(created.id));
  assert.equal(removed.deleted, true);
  refused(await resend.inboxes.get(created.id), 404);
});
