/**
 * Runs a benchmark script as a child process (tsx, sources of the workspace) and
 * reads its result: the JSON after `marker` on one line of its stdout. Its stderr
 * lines become progress lines.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { progress } from "./table.js";

export async function childBench<T>(script: string, args: string[], marker: string): Promise<T> {
  const path = fileURLToPath(new URL(script, new URL("../suites/", import.meta.url)));
  const child = spawn(
    process.execPath,
    [...process.execArgv, "--conditions=@rendezvous/source", path, ...args, "--json"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    err += d.toString();
    for (const line of d.toString().split("\n")) if (line.trim()) progress(line.trim().replace(/^\[[\d:.]+\] /, ""));
  });
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  const line = out.split("\n").find((l) => l.startsWith(marker));
  if (code !== 0 || !line) throw new Error(`${script} failed (exit ${code}):\n${err.slice(-2000)}`);
  return JSON.parse(line.slice(marker.length)) as T;
}
