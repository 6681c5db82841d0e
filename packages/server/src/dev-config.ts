/**
 * The development config `rendezvous start` creates on first run without a config
 * file: a demo tenant with a host key and a producer allowed every type.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { ConfigInput } from "@rendezvous/engine";

const token = (prefix: string) => `${prefix}_${randomBytes(18).toString("base64url")}`;

export function makeDevConfig(): ConfigInput {
  return {
    partitions: 16,
    adminToken: token("adm"),
    tenants: {
      demo: {
        hostKeys: [token("hk_demo")],
        producers: { demo: { secrets: [token("whsec")], keys: [token("pk_demo")], eventTypes: ["*"] } },
      },
    },
  };
}

/** Reads the dev config at `path`, creating it first when missing; says whether it was created. */
export function ensureDevConfig(path: string): { created: boolean; config: ConfigInput } {
  if (existsSync(path)) return { created: false, config: JSON.parse(readFileSync(path, "utf8")) as ConfigInput };
  const config = makeDevConfig();
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  return { created: true, config };
}

/**
 * The lines printed once when the dev config is created (the keys, on purpose), and where
 * the embedded Redis is when there is one.
 */
export function describeDevConfig(
  path: string,
  config: ConfigInput,
  url: string,
  redis?: { url: string; file: string },
): string {
  const demo = config.tenants?.demo;
  const producer = demo?.producers?.demo;
  return [
    `Created a development config at ${path} (keep it private):`,
    `  admin token     ${config.adminToken}`,
    `  tenant          demo`,
    `  host key        ${demo?.hostKeys?.[0]}`,
    `  producer        demo/demo`,
    `  producer key    ${producer?.keys?.[0]}`,
    `  producer secret ${producer?.secrets?.[0]}`,
    ...(redis ? [`  redis           ${redis.url} (while it runs, also in ${redis.file})`] : []),
    `Try: curl -s -X POST ${url}/v1/events -H 'content-type: application/json' \\`,
    `       -H 'Rendezvous-Producer: demo/demo' -H 'Authorization: Bearer ${producer?.keys?.[0]}' \\`,
    `       -d '{"id":"evt-1","type":"job.done","correlationId":"job-1","payload":{}}'`,
    "",
  ].join("\n");
}
