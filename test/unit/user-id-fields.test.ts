import { test } from "node:test";
import assert from "node:assert/strict";
import { emptyRows, scanRows } from "../../redaction/csv-rows";
import { UserIdFields } from "../../redaction/user-id-fields";

const idsOf = (fields: UserIdFields, csv: string) => {
  const buf = Buffer.from(csv);
  return fields.idsOf(buf, scanRows(buf, 0, true, 1, 3, emptyRows()), 0);
};

test("user ids by their raw bytes: the same id quoted or not, repeated across calls, is the same id; an empty first column falls to the next; ids no user can have name no one", () => {
  const fields = new UserIdFields([0, 1]);
  const long = "u".repeat(201);
  const rows = ["alice,x,1", '"alice",x,2', ",bob,3", '"",bob,4', '"a""b",x,5', `${long},x,6`, `"${long}",bob,7`, '"ctl\x01",bob,8', ",,9", "alice,x,10"];
  const expected = ["alice", "alice", "bob", "bob", 'a"b', undefined, undefined, undefined, undefined, "alice"];
  assert.deepEqual(idsOf(fields, `${rows.join("\n")}\n`), expected);
  // Read again (every field now known by its bytes): the same ids, the very same strings.
  const again = idsOf(fields, `${rows.join("\n")}\n`);
  assert.deepEqual(again, expected);
  assert.equal(again[0], again[1]);
  // A field that differs in one byte only, or is a prefix of a known one, is its own id.
  assert.deepEqual(idsOf(fields, "alicf,x,1\nalic,x,2\nalice2,x,3\n"), ["alicf", "alic", "alice2"]);
});
