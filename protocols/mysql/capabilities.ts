/**
 * Capability flags exchanged in the handshake (include/mysql_com.h; MariaDB's
 * include/mysql_com.h for the extended ones). The handshake carries 32 bits; MariaDB 10.2+
 * leaves CLIENT_MYSQL (bit 0) clear and puts 32 more, its own, in the handshake's filler.
 */
export const Capability = {
  /** CLIENT_LONG_PASSWORD in MySQL; MariaDB calls it CLIENT_MYSQL and a MariaDB server leaves it clear. */
  LongPassword: 0x00000001,
  FoundRows: 0x00000002,
  LongFlag: 0x00000004,
  ConnectWithDb: 0x00000008,
  NoSchema: 0x00000010,
  Compress: 0x00000020,
  Odbc: 0x00000040,
  LocalFiles: 0x00000080,
  IgnoreSpace: 0x00000100,
  Protocol41: 0x00000200,
  Interactive: 0x00000400,
  Ssl: 0x00000800,
  IgnoreSigpipe: 0x00001000,
  Transactions: 0x00002000,
  Reserved: 0x00004000,
  SecureConnection: 0x00008000,
  MultiStatements: 0x00010000,
  MultiResults: 0x00020000,
  PsMultiResults: 0x00040000,
  PluginAuth: 0x00080000,
  ConnectAttrs: 0x00100000,
  PluginAuthLenencClientData: 0x00200000,
  CanHandleExpiredPasswords: 0x00400000,
  SessionTrack: 0x00800000,
  DeprecateEof: 0x01000000,
  OptionalResultsetMetadata: 0x02000000,
  ZstdCompressionAlgorithm: 0x04000000,
  QueryAttributes: 0x08000000,
  MultiFactorAuthentication: 0x10000000,
  CapabilityExtension: 0x20000000,
  SslVerifyServerCert: 0x40000000,
  RememberOptions: 0x80000000,
} as const;

/** MariaDB's extended capabilities: the 4 filler bytes of the handshake when CLIENT_MYSQL is clear. */
export const MariaDbCapability = {
  Progress: 0x00000001,
  ComMulti: 0x00000002,
  StmtBulkOperations: 0x00000004,
  ExtendedMetadata: 0x00000008,
  CacheMetadata: 0x00000010,
  BulkUnitResults: 0x00000020,
} as const;

/** Whether every bit of `flag` is set in `capabilities` (the high bit makes `&` negative, so compare unsigned). */
export function hasCapability(capabilities: number, flag: number): boolean {
  return (capabilities & flag) >>> 0 === flag >>> 0;
}
