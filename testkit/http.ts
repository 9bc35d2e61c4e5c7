import type { NodeProcess } from "./node-process";

// any: response bodies of many shapes, each checked field by field where a test uses it
export type Body = any;

export interface Answer {
  status: number;
  etag: string | null;
  body: Body;
}

/** One request to a node's gateway: an object body is sent as JSON, a string as it is (with the headers given). */
export async function call(node: NodeProcess, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(`${node.url}${path}`, {
    method,
    headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    etag: response.headers.get("etag"),
    body: text && response.headers.get("content-type")?.includes("json") ? JSON.parse(text) : text,
  };
}
