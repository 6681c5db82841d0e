/**
 * Headless Chromium for the console tests: the Debian `chromium` package driven by
 * playwright-core (never a downloaded browser), a fresh profile directory per
 * launch.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { consoleBuilt } from "@rendezvous/console";
import { type BrowserContext, chromium, type Page } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** The console's built files are there (console-setup.ts builds them before the run). */
export function ensureConsoleBuilt(): void {
  if (!consoleBuilt()) throw new Error("packages/console is not built: npm run build --workspace @rendezvous/console");
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `no Chromium at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH); .ci/run installs it`,
    );
  }
  const profile = mkdtempSync(join(tmpdir(), "rdv-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    viewport: { width: 1280, height: 900 },
  });
  // a locator waits for its element this long (below the tests' poll timeouts)
  context.setDefaultTimeout(10_000);
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Opens the console at `path` (below /console) and signs in with `token`. */
export async function signIn(page: Page, base: string, token: string, path = "/"): Promise<void> {
  await page.goto(`${base}/console${path}`);
  await page.getByLabel("Admin token or host key").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByTestId("identity").waitFor();
}
