/** Message codes a client sends after startup (PostgreSQL protocol 3.0). */
export const enum FrontendCode {
  Bind = 0x42, // 'B'
  Close = 0x43, // 'C'
  CopyData = 0x64, // 'd'
  CopyDone = 0x63, // 'c'
  CopyFail = 0x66, // 'f'
  Describe = 0x44, // 'D'
  Execute = 0x45, // 'E'
  Flush = 0x48, // 'H'
  FunctionCall = 0x46, // 'F'
  Parse = 0x50, // 'P'
  Password = 0x70, // 'p' (also SASLInitialResponse, SASLResponse, GSSResponse)
  Query = 0x51, // 'Q'
  Sync = 0x53, // 'S'
  Terminate = 0x58, // 'X'
}

/** Message codes a server sends. */
export const enum BackendCode {
  Authentication = 0x52, // 'R'
  BackendKeyData = 0x4b, // 'K'
  BindComplete = 0x32, // '2'
  CloseComplete = 0x33, // '3'
  CommandComplete = 0x43, // 'C'
  CopyBothResponse = 0x57, // 'W'
  CopyData = 0x64, // 'd'
  CopyDone = 0x63, // 'c'
  CopyInResponse = 0x47, // 'G'
  CopyOutResponse = 0x48, // 'H'
  DataRow = 0x44, // 'D'
  EmptyQueryResponse = 0x49, // 'I'
  ErrorResponse = 0x45, // 'E'
  FunctionCallResponse = 0x56, // 'V'
  NegotiateProtocolVersion = 0x76, // 'v'
  NoData = 0x6e, // 'n'
  NoticeResponse = 0x4e, // 'N'
  NotificationResponse = 0x41, // 'A'
  ParameterDescription = 0x74, // 't'
  ParameterStatus = 0x53, // 'S'
  ParseComplete = 0x31, // '1'
  PortalSuspended = 0x73, // 's'
  ReadyForQuery = 0x5a, // 'Z'
  RowDescription = 0x54, // 'T'
}

/** The request codes that take the place of a protocol version in the first packet. */
export const enum StartupCode {
  Protocol30 = 196608, // 3 << 16
  CancelRequest = 80877102,
  SSLRequest = 80877103,
  GSSENCRequest = 80877104,
}

/** Describe and Close name a prepared statement or a portal. */
export const enum TargetKind {
  Statement = 0x53, // 'S'
  Portal = 0x50, // 'P'
}

/** Transaction status carried by ReadyForQuery. */
export const enum TransactionStatus {
  Idle = 0x49, // 'I'
  InTransaction = 0x54, // 'T'
  Failed = 0x45, // 'E'
}
