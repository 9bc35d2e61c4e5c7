import { HandlerError } from "../actors/runtime/errors";

/** `host:port` (IPv6 hosts in brackets) into its parts; validated when the export is created. */
export function splitEndpoint(endpoint: string): [string, number] {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(endpoint);
  if (!match) throw new Error(`invalid endpoint '${endpoint}'`);
  return [match[1] ?? match[2]!, Number(match[3])];
}

/** A wire export's backing store, checked as PUT /export takes it: present, `host:port`, a port in range. */
export function checkHostPortEndpoint(type: string, endpoint: string | undefined): void {
  if (endpoint === undefined)
    throw new HandlerError("EXPORT_INVALID", `a ${type} export needs the endpoint of its backing store`, {
      details: [{ path: "endpoint", problem: "required: host:port" }],
    });
  let port: number;
  try {
    [, port] = splitEndpoint(endpoint);
  } catch {
    throw new HandlerError("EXPORT_INVALID", `endpoint '${endpoint}' is not host:port`, { details: [{ path: "endpoint", problem: "must be host:port" }] });
  }
  if (port < 1 || port > 65535)
    throw new HandlerError("EXPORT_INVALID", `endpoint port ${port} is out of range`, { details: [{ path: "endpoint", problem: "must be host:port" }] });
}
