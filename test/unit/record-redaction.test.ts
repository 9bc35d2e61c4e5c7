import { test } from "node:test";
import assert from "node:assert/strict";
import { compilePolicy } from "../../decision/compiled-policy";
import { FieldReachedTwice, planRecords, RecordShapeError, redactRecord, userIdOf } from "../../decision/record-redaction";
import type { Decision } from "../../decision/types";
import { realisticPolicy } from "../../testkit/policy";
import { nestedIdsGroup, twoIdsGroup } from "../fixtures/user-id-groups";

const policy = compilePolicy(realisticPolicy(), 1);
const allowedFor = (categoryIds: string[]): Decision => ({
  allowed: true,
  flow: "platform",
  categoryIds,
  reasons: [{ code: "ALLOWED_BY_TERMS", text: "accepted" }],
  summary: "Kept.",
  revision: 1,
});
const plan = planRecords(policy, {
  name: "nested",
  fieldMappings: [
    { recordField: "owner.id", resourceContext: true },
    { recordField: "altId", resourceContext: true },
    { recordField: "contact.email", categoryId: "contact", fieldId: "contact.email" },
    { recordField: "login", fieldId: "credentials.email" },
    { recordField: "usage", categoryId: "usage" },
    { recordField: "note" },
  ],
});

test("the user is the first non-empty resource-context value, in mapping order", () => {
  assert.equal(userIdOf({ owner: { id: "u1" }, altId: "u2" }, plan), "u1");
  assert.equal(userIdOf({ owner: { id: "" }, altId: "u2" }, plan), "u2");
  assert.equal(userIdOf({ owner: { id: 42 } }, plan), "42");
  assert.equal(userIdOf({ owner: { id: null }, altId: "" }, plan), undefined);
  assert.equal(userIdOf({ owner: "u1" }, plan), undefined, "a path through a non-object resolves nothing");
  assert.equal(userIdOf(JSON.parse('{"owner": {"id": {"toString": "x"}}}'), plan), undefined);
});

test("fields of allowed categories are kept; everything else, unknown fields included, becomes null, with the reason", () => {
  const record = {
    owner: { id: "u1" },
    altId: "u9",
    contact: { email: "a@example.com", phone: "555" },
    login: "alogin",
    usage: { clicks: 3 },
    note: "private",
    extra: "?",
  };
  const { record: out, fields } = redactRecord(record, plan, allowedFor(["contact", "usage"]));
  assert.deepEqual(out, {
    owner: { id: null },
    altId: null,
    contact: { email: "a@example.com", phone: null },
    login: null,
    usage: { clicks: 3 },
    note: null,
    extra: null,
  });
  assert.deepEqual(fields["contact.email"], { kept: true, why: "category 'contact' is allowed" });
  assert.deepEqual(fields.login, { kept: false, why: "category 'credentials' is not allowed for this purpose" });
  assert.deepEqual(fields.note, { kept: false, why: "mapped to no category" });
  assert.deepEqual(fields.extra, { kept: false, why: "not in the mapping group" });
  assert.deepEqual(fields["owner.id"], { kept: false, why: "mapped to no category" }, "a resource-context field with no category is emptied");
  assert.deepEqual(fields.usage, { kept: true, why: "category 'usage' is allowed" }, "a mapping on an object keeps all of it");
});

test("a __proto__ key stays a plain key and touches no prototype", () => {
  const record = JSON.parse('{"owner": {"id": "u1"}, "__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}}');
  const { record: out } = redactRecord(record, plan, allowedFor(["contact"]));
  assert.equal(Object.getPrototypeOf(out), Object.prototype);
  assert.deepEqual(Object.keys(out), ["owner", "__proto__", "constructor"]);
  assert.equal(JSON.stringify(out), '{"owner":{"id":null},"__proto__":null,"constructor":null}');
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

test("pathological nesting fails cleanly; unmapped nesting is emptied whole without walking it", () => {
  let deep: Record<string, unknown> = { leaf: 1 };
  for (let i = 0; i < 100; i++) deep = { next: deep };
  const deepPlan = planRecords(policy, {
    name: "deep",
    fieldMappings: [
      { recordField: "owner.id", resourceContext: true },
      { recordField: `${"next.".repeat(60)}leaf`, categoryId: "usage" },
    ],
  });
  assert.throws(() => redactRecord({ owner: { id: "u1" }, ...deep }, deepPlan, allowedFor(["usage"])), RecordShapeError);
  assert.deepEqual(redactRecord({ owner: { id: "u1" }, ...deep }, plan, allowedFor(["contact"])).record, { owner: { id: null }, next: null });
});

test("a key that is the whole record field name (spec 4.4) and a nested path address the same field", () => {
  const flat = planRecords(policy, {
    name: "flat",
    fieldMappings: [
      { recordField: "users.id", resourceContext: true },
      { recordField: "users.email", categoryId: "contact" },
    ],
  });
  assert.equal(userIdOf({ "users.id": "u1" }, flat), "u1");
  assert.equal(userIdOf({ users: { id: "u2" } }, flat), "u2");
  assert.deepEqual(redactRecord({ "users.id": "u1", "users.email": "a@x" }, flat, allowedFor(["contact"])).record, { "users.id": null, "users.email": "a@x" });
  assert.deepEqual(redactRecord({ users: { id: "u1", email: "a@x" } }, flat, allowedFor(["contact"])).record, { users: { id: null, email: "a@x" } });
  // Both at once: the user is decided by the dotted key while the nested object may be another user's: refused, as documents refuse it.
  assert.throws(
    () => redactRecord({ "users.id": "u1", users: { id: "u2", email: "u2@x" } }, flat, allowedFor(["contact"])),
    (error: unknown) => error instanceof RecordShapeError && /'users\.id' twice \(as a dotted key and as a nested path\)/.test(error.message),
  );
  assert.throws(
    () => redactRecord({ users: { email: "u2@x" }, "users.email": "u1@x" }, flat, allowedFor(["contact"])),
    RecordShapeError,
    "any field, either order",
  );
});

const nestedIds = planRecords(policy, nestedIdsGroup);

test("the user id is found wherever the redaction walk reaches its field: key 'a.b' then 'id' names the user, not the next user-id field", () => {
  // The walk goes through key `a.b` to `id` and releases `email` beside it: that e-mail is decided under the id beside it.
  assert.equal(userIdOf({ "a.b": { id: "victim", email: "victim@x" }, author: "me" }, nestedIds), "victim");
  assert.equal(userIdOf({ a: { "b.id": "victim" }, author: "me" }, nestedIds), "victim");
  assert.equal(userIdOf({ a: { b: { id: "victim" } }, author: "me" }, nestedIds), "victim");
  assert.equal(userIdOf({ "a.b.id": "victim", author: "me" }, nestedIds), "victim");
  assert.equal(userIdOf({ "a.b": { email: "x@x" }, author: "me" }, nestedIds), "me", "no id at a.b.id: the next field");
  // What the walk does not go into is not read either: an empty object, a value that is not an object.
  assert.equal(userIdOf({ a: "victim", author: "me" }, nestedIds), "me");
  assert.equal(userIdOf({ a: { b: {} }, author: "me" }, nestedIds), "me");
  const { record } = redactRecord({ "a.b": { id: "victim", email: "victim@x" }, author: "me" }, nestedIds, allowedFor(["contact"]));
  assert.deepEqual(record, { "a.b": { id: null, email: "victim@x" }, author: null }, "the walk the user was found by");
});

test("a user-id field reached two ways refuses the record when its user is looked for, before anything is decided; so does any field", () => {
  const twice = (record: Record<string, unknown>, path: string) =>
    assert.throws(
      () => userIdOf(record, nestedIds),
      (error: unknown) => error instanceof FieldReachedTwice && error.path === path && error.message.includes(`'${path}' twice`),
      JSON.stringify(record),
    );
  twice({ "a.b": { id: "victim" }, a: { b: { id: "other" } }, author: "me" }, "a.b");
  twice({ a: { b: { id: "other" } }, "a.b": { id: "victim" }, author: "me" }, "a.b");
  twice({ "a.b.id": "victim", a: { "b.id": "other" }, author: "me" }, "a.b.id");
  twice({ author: "me", "a.b": { email: "x@x" }, a: { b: { email: "y@x" } } }, "a.b");
});

test("the first user-id value that is there and not null or '' decides: one that cannot name a user drops the record, the next field is not read", () => {
  const twoIds = planRecords(policy, twoIdsGroup);
  for (const first of ["12345678901234567890", "1.5", "-1e400", "true", "false", '{"id":"x"}', "{}", '["x"]', "[]", '"bad\\u0001id"', `"${"u".repeat(201)}"`])
    assert.equal(userIdOf(JSON.parse(`{"patient":${first},"author":"me","email":"secret@x"}`), twoIds), undefined, `patient ${first}`);
  for (const empty of ["null", '""'])
    assert.equal(userIdOf(JSON.parse(`{"patient":${empty},"author":"me"}`), twoIds), "me", `patient ${empty}: the next field`);
  assert.equal(userIdOf({ author: "me" }, twoIds), "me", "no patient field: the next field");
  assert.equal(userIdOf({ patient: 7, author: "me" }, twoIds), "7");
});
