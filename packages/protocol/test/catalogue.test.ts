import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { errorCatalogue } from "../src/index.js";

const apiPath = new URL("../../../docs/api.md", import.meta.url);
const docsPath = new URL("../../../docs/errors.md", import.meta.url);

describe("error catalogue", () => {
  it("has every docs/api.md error code with its status", () => {
    expect(existsSync(apiPath), "docs/api.md").toBe(true);
    const api = readFileSync(apiPath, "utf8");
    const documented = [...api.matchAll(/`([a-z_]+)` (\d{3})/g)].map((m) => [m[1] as string, Number(m[2])] as const);
    expect(documented.length).toBeGreaterThan(10);
    for (const [code, status] of documented) {
      expect(errorCatalogue, code).toHaveProperty(code);
      expect(errorCatalogue[code as keyof typeof errorCatalogue].status, code).toBe(status);
    }
  });

  it("documents every code of the catalogue in docs/errors.md", () => {
    const docs = readFileSync(docsPath, "utf8");
    for (const [code, { status }] of Object.entries(errorCatalogue)) {
      expect(docs, code).toMatch(new RegExp(`\\|\\s*\`${code}\`\\s*\\|\\s*${status}\\s*\\|`));
    }
  });
});
