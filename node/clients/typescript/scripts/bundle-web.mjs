// Assembles web/, the playground as the gateway serves it (--web-root): the page, the SDK as
// compiled to dist/, and capnp-es's runtime (no compiler), so that it works offline.
import { cpSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const web = join(here, "web");
rmSync(web, { recursive: true, force: true });
mkdirSync(web);
cpSync(join(here, "playground"), web, { recursive: true });
cpSync(join(here, "dist"), join(web, "sdk"), {
  recursive: true,
  filter: (path) => !path.endsWith(".d.ts"),
});
cpSync(join(here, "node_modules/capnp-es/dist"), join(web, "vendor/capnp-es"), {
  recursive: true,
  filter: (path) => !path.includes("/compiler") && !path.endsWith(".d.mts") && !path.endsWith(".d.ts"),
});
console.log(`playground assembled in ${web}`);
