/** Tiny argv parser: `--flag`, `--name value`, `--name=value`. */
export interface Args {
  flag(name: string): boolean;
  number(name: string, fallback: number): number;
  string(name: string, fallback: string): string;
}

export function parseArgs(argv: string[] = process.argv.slice(2)): Args {
  const values = new Map<string, string>();
  const flags = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (!a.startsWith("--")) throw new Error(`unexpected argument ${a}`);
    const eq = a.indexOf("=");
    if (eq > 0) values.set(a.slice(2, eq), a.slice(eq + 1));
    else if (i + 1 < argv.length && !(argv[i + 1] as string).startsWith("--"))
      values.set(a.slice(2), argv[++i] as string);
    else flags.add(a.slice(2));
  }
  return {
    flag: (name) => flags.has(name) || values.get(name) === "true",
    number(name, fallback) {
      const v = values.get(name);
      if (v === undefined) return fallback;
      const n = Number(v);
      if (!Number.isFinite(n)) throw new Error(`--${name} needs a number, got ${v}`);
      return n;
    },
    string: (name, fallback) => values.get(name) ?? fallback,
  };
}
