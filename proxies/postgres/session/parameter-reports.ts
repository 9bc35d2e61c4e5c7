import type { Connection } from "./connection";

/** Client encodings whose text is the database's UTF-8 bytes (user ids are read as UTF-8). */
const clientEncodings = new Set(["UTF8", "UTF-8", "UNICODE", "SQL_ASCII"]);

/** Parameters whose later reports cross the export, with the values they may have. */
const reportedParameters: Record<string, RegExp> = {
  client_encoding: /^[A-Za-z0-9_-]{1,20}$/,
  DateStyle: /^(ISO|Postgres|SQL|German), (DMY|MDY|YMD)$/,
  IntervalStyle: /^(postgres|postgres_verbose|sql_standard|iso_8601)$/,
  integer_datetimes: /^(on|off)$/,
  standard_conforming_strings: /^(on|off)$/,
  is_superuser: /^(on|off)$/,
  in_hot_standby: /^(on|off)$/,
  default_transaction_read_only: /^(on|off)$/,
  // Fixed by the server binary and the database at creation: no session can choose them.
  server_version: /^[0-9][0-9A-Za-z.+~()_ -]{0,80}$/,
  server_encoding: /^[A-Za-z0-9_-]{1,20}$/,
};

/**
 * Which ParameterStatus reports of the backend cross to the client (set_config() and a role's
 * stored settings can make the backend report any value), and the client encodings the export
 * refuses.
 */
export class ParameterReports {
  /** What the client asked application_name to be at startup. */
  clientApplicationName?: string;
  /** The role the backend session logs in as. */
  loginUser?: string;

  constructor(private readonly connection: Pick<Connection, "refuse">) {}

  /** Whether the report `name` = `value` crosses; a converting client encoding ends the connection instead. */
  forwards(name: string, value: string): boolean {
    return this.encodingSupported(name, value) && this.readsTextAsTheExport(name, value) && this.mayCross(name, value);
  }

  /**
   * Statements are read by the export as with standard_conforming_strings on: a session the backend
   * says has it off (a startup option, a role's or the server's setting: statements cannot set it,
   * analysis/lexer-settings.ts) would read a backslash in a string otherwise, so it ends here, before
   * anything the backend sends after the report crosses.
   */
  private readsTextAsTheExport(name: string, value: string): boolean {
    if (name !== "standard_conforming_strings" || value === "on") return true;
    this.connection.refuse("0A000", `standard_conforming_strings ${value} is not supported through this export: it must be on`, "setting.refused");
    return false;
  }

  /** User ids are read as UTF-8: a client encoding that converts text is refused. */
  private encodingSupported(name: string, value: string): boolean {
    if (name !== "client_encoding" || clientEncodings.has(value.toUpperCase())) return true;
    this.connection.refuse("0A000", `client_encoding ${value} is not supported through this export: use UTF8`, "client-encoding.refused");
    return false;
  }

  /**
   * Whether a reported parameter crosses: values of a known form, and those only the client
   * could have chosen (its own application_name, the user it logged in as).
   */
  private mayCross(name: string, value: string): boolean {
    if (name === "application_name") return value === (this.clientApplicationName ?? "");
    if (name === "session_authorization") return value === this.loginUser;
    return Object.hasOwn(reportedParameters, name) && reportedParameters[name]!.test(value);
  }
}
