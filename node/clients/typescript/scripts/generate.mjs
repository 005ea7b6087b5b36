// Compiles the client protocol's schema (node/client.capnp, and the store's schema it uses) into
// TypeScript under src/generated/, with the Cap'n Proto compiler (capnpc) and capnp-es.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { compileAll } from "capnp-es/compiler";

const here = dirname(fileURLToPath(import.meta.url));
const repository = resolve(here, "../../../..");
const out = resolve(here, "../src/generated");
// The generated client.ts imports the store's types from ./matching/matching.js: the layout below.
const placement = { "node/client.ts": "client.ts", "matching/matching.ts": "matching/matching.ts" };

const request = execFileSync(
  "capnpc",
  ["-o-", `-I${repository}`, `--src-prefix=${repository}`, "node/client.capnp", "matching/matching.capnp"],
  {
    cwd: repository,
    env: { ...process.env, PWD: repository },
    stdio: ["ignore", "pipe", "inherit"],
    maxBuffer: 64 * 1024 * 1024,
  },
);
const { files } = await compileAll(request, { ts: true });
for (const [name, text] of files) {
  const target = placement[name];
  if (!target) {
    throw new Error(`capnp-es generated an unexpected file: ${name}`);
  }
  mkdirSync(dirname(join(out, target)), { recursive: true });
  // capnp-es writes an import of a schema beside this one as ".//name.js", which a browser
  // resolves to a path with an empty segment: one slash is meant.
  writeFileSync(join(out, target), text.replaceAll('from ".//', 'from "./'));
}
console.log(`generated ${[...files.keys()].join(", ")} into ${out}`);
