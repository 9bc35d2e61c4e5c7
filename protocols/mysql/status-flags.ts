/** Server status flags of OK and EOF packets and the handshake (SERVER_STATUS_* in include/mysql_com.h). */
export const ServerStatus = {
  InTransaction: 0x0001,
  Autocommit: 0x0002,
  MoreResultsExist: 0x0008,
  NoGoodIndexUsed: 0x0010,
  NoIndexUsed: 0x0020,
  /** A COM_STMT_EXECUTE opened a cursor: rows come by COM_STMT_FETCH. */
  CursorExists: 0x0040,
  LastRowSent: 0x0080,
  DbDropped: 0x0100,
  NoBackslashEscapes: 0x0200,
  MetadataChanged: 0x0400,
  QueryWasSlow: 0x0800,
  PsOutParams: 0x1000,
  InTransactionReadonly: 0x2000,
  /** The OK packet carries session-state-change data (CLIENT_SESSION_TRACK). */
  SessionStateChanged: 0x4000,
} as const;
