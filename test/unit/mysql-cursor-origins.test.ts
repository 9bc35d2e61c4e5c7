import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { ColumnDefinition } from "../../protocols/mysql/column-definition";
import { ColumnType } from "../../protocols/mysql/column-types";
import { withPreparedOrigins } from "../../proxies/mysql/session/cursor-origins";

/** A definition as MariaDB sends it for `users.<orgName> AS <name>`. */
function column(name: string, orgName: string, table = "users"): ColumnDefinition {
  return {
    catalog: "def",
    schema: "app",
    table,
    orgTable: "users",
    name,
    orgName,
    characterSet: 45,
    columnLength: 160,
    type: ColumnType.VarString,
    flags: 0,
    decimals: 0,
  };
}

describe("MySQL cursor definitions (issue 21): origins taken back from the prepare's definitions only for MariaDB's alias-as-org_name", () => {
  const prepared = [column("email", "email"), column("warden_user_0", "id")];

  test("an aliased column whose cursor definition names its alias as org_name gets the prepare's org_name", () => {
    const atCursor = [column("email", "email"), column("warden_user_0", "warden_user_0")];
    assert.deepEqual(
      withPreparedOrigins(atCursor, prepared).map((c) => c.orgName),
      ["email", "id"],
    );
  });

  test("any other difference is left as the execute says (the plan then attributes nothing to it)", () => {
    const otherTable = [column("email", "email"), column("warden_user_0", "warden_user_0", "b")];
    assert.equal(withPreparedOrigins(otherTable, prepared)[1]!.orgName, "warden_user_0", "another table alias");
    const otherName = [column("email", "email"), column("warden_user_1", "warden_user_1")];
    assert.equal(withPreparedOrigins(otherName, prepared)[1]!.orgName, "warden_user_1", "another column name");
    const otherOrigin = [column("email", "email"), column("warden_user_0", "secret")];
    assert.equal(withPreparedOrigins(otherOrigin, prepared)[1]!.orgName, "secret", "an org_name that is not the alias");
    const otherType = [column("email", "email"), { ...column("warden_user_0", "warden_user_0"), type: ColumnType.Long }];
    assert.equal(withPreparedOrigins(otherType, prepared)[1]!.orgName, "warden_user_0", "another type");
    const fewer = [column("warden_user_0", "warden_user_0")];
    assert.equal(withPreparedOrigins(fewer, prepared)[0]!.orgName, "warden_user_0", "another column count");
    assert.equal(withPreparedOrigins(fewer, undefined)[0]!.orgName, "warden_user_0", "no prepare's definitions");
  });
});
