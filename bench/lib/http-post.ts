/**
 * A lean HTTP/1.1 JSON poster for load generators: node:http over keep-alive
 * connections (at most `sockets` to the server), no fetch machinery. On a small machine
 * the driver shares the cores with the product, so what it spends per request is taken
 * from the numbers it measures.
 */
import { Agent, request } from "node:http";

export interface Poster {
  /** POSTs `body` as JSON; the answer's text, or an error when the status is not `ok`. */
  post(path: string, headers: Record<string, string>, body: unknown, ok: number): Promise<string>;
  close(): void;
}

export function poster(base: string, sockets: number): Poster {
  // an idle socket is let go after 4 s, before the server's keep-alive timeout (5 s by default)
  // closes it: a request sent on a socket the server is closing fails with "socket hang up"
  const agent = new Agent({ keepAlive: true, maxSockets: sockets, timeout: 4000 });
  const origin = new URL(base);
  return {
    post(path, headers, body, ok) {
      const data = Buffer.from(JSON.stringify(body));
      return new Promise((resolve, reject) => {
        const req = request(
          {
            agent,
            host: origin.hostname,
            port: origin.port,
            path,
            method: "POST",
            headers: { ...headers, "content-type": "application/json", "content-length": data.length },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("error", reject);
            res.on("end", () => {
              const text = Buffer.concat(chunks).toString();
              if (res.statusCode === ok) resolve(text);
              else reject(new Error(`POST ${path}: ${res.statusCode} ${text.slice(0, 500)}`));
            });
          },
        );
        req.on("error", reject);
        req.end(data);
      });
    },
    close: () => agent.destroy(),
  };
}
