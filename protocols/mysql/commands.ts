/** Command codes: the first byte of every client packet after the handshake (enum_server_command). */
export const Command = {
  Sleep: 0x00,
  Quit: 0x01,
  InitDb: 0x02,
  Query: 0x03,
  FieldList: 0x04,
  CreateDb: 0x05,
  DropDb: 0x06,
  Refresh: 0x07,
  Shutdown: 0x08,
  Statistics: 0x09,
  ProcessInfo: 0x0a,
  Connect: 0x0b,
  ProcessKill: 0x0c,
  Debug: 0x0d,
  Ping: 0x0e,
  Time: 0x0f,
  DelayedInsert: 0x10,
  ChangeUser: 0x11,
  BinlogDump: 0x12,
  TableDump: 0x13,
  ConnectOut: 0x14,
  RegisterSlave: 0x15,
  StmtPrepare: 0x16,
  StmtExecute: 0x17,
  StmtSendLongData: 0x18,
  StmtClose: 0x19,
  StmtReset: 0x1a,
  SetOption: 0x1b,
  StmtFetch: 0x1c,
  Daemon: 0x1d,
  BinlogDumpGtid: 0x1e,
  ResetConnection: 0x1f,
  /** MySQL 8.0.17+: the clone plugin's protocol. */
  Clone: 0x20,
  SubscribeGroupReplicationStream: 0x21,
  /** MariaDB: array binding of a prepared statement (MARIADB_CLIENT_STMT_BULK_OPERATIONS). */
  StmtBulkExecute: 0xfa,
  /** MariaDB (deprecated): several commands in one packet. */
  Multi: 0xfe,
} as const;

export type CommandCode = (typeof Command)[keyof typeof Command];

const names = new Map<number, string>(Object.entries(Command).map(([name, code]) => [code, `COM_${name.replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase()}`]));

/** COM_QUERY and the like for a code; `COM_0x..` for a code neither MySQL nor MariaDB defines. */
export function commandName(code: number): string {
  return names.get(code) ?? `COM_0x${code.toString(16).padStart(2, "0")}`;
}

/**
 * Commands that replicate, clone or administer the server rather than read data: a proxy that
 * decides every row has no row to decide in a binlog stream, so it refuses them by code.
 */
const replicationOrAdministration = new Set<number>([
  Command.BinlogDump,
  Command.BinlogDumpGtid,
  Command.RegisterSlave,
  Command.TableDump,
  Command.ConnectOut,
  Command.Clone,
  Command.SubscribeGroupReplicationStream,
  Command.Shutdown,
  Command.ProcessKill,
  Command.Debug,
  Command.Daemon,
  Command.Connect,
  Command.DelayedInsert,
  Command.Refresh,
  Command.CreateDb,
  Command.DropDb,
]);

export function isReplicationOrAdministrationCommand(code: number): boolean {
  return replicationOrAdministration.has(code);
}

/** The command code of a client packet's payload; undefined for an empty payload. */
export function commandOf(payload: Buffer): number | undefined {
  return payload.length === 0 ? undefined : payload[0];
}
