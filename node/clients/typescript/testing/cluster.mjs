// A local matchmesh cluster for the tests: nodes on loopback ports they pick free, a gateway in
// front of each, all stopped by stop() and, whatever happens, when this process exits.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

const binaries = process.env.MATCHMESH_BIN_DIR;
if (!binaries) {
  throw new Error("MATCHMESH_BIN_DIR must name the folder holding matchmesh and matchmesh-gateway");
}

const running = new Set();
process.on("exit", () => {
  for (const child of running) {
    child.kill("SIGKILL");
  }
});

export const config = {
  cluster: { name: "sdk-test", secret: "0123456789abcdef0123456789abcdef" },
  matching: { distributionRate: 50, profiles: { Duel: { rank: 100 } } },
  ticketTypes: {
    1: {
      name: "duel",
      profiles: ["Duel"],
      maxMembers: 2,
      properties: { rank: { value: "rating", searchSpread: 200 } },
      allowMatch: { value: "rating", maxDifference: 300 },
      ticketDurationSeconds: 10,
      searchIntervalMs: 100,
      searchTries: 1,
      announceMembers: true,
    },
  },
};

// Starts `command` and resolves with the first stdout line matching `ready` (its match), or
// rejects with what it wrote to stderr if it exits first or takes longer than 10 s.
function start(command, args, ready) {
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
  running.add(child);
  if (process.env.MATCHMESH_SERVER_CPUS) {  // a benchmark keeps the servers off its own CPUs
    execFileSync("taskset", ["-a", "-p", "-c", process.env.MATCHMESH_SERVER_CPUS, String(child.pid)], { stdio: "ignore" });
  }
  child.on("exit", () => running.delete(child));
  let errors = "";
  child.stderr.on("data", (chunk) => {
    errors = (errors + chunk.toString()).slice(-4000);
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${command} was not ready within 10 s: ${errors}`)), 10000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${command} exited (${code}) before it was ready: ${errors}`));
    });
    createInterface({ input: child.stdout }).on("line", (line) => {
      const found = line.match(ready);
      if (found) {
        clearTimeout(timer);
        resolve({ child, found });
      }
    });
  });
}

// Stops a child with SIGTERM (SIGKILL after 5 s); resolves with how it ended: "exit 0" is a
// clean stop (a sanitizer's report would make it non-zero).
function stopChild(child) {
  return new Promise((resolve) => {
    const ended = () => (child.exitCode !== null ? `exit ${child.exitCode}` : `signal ${child.signalCode}`);
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve(ended());
      return;
    }
    const kill = setTimeout(() => child.kill("SIGKILL"), 5000);
    child.on("exit", () => {
      clearTimeout(kill);
      resolve(ended());
    });
    child.kill("SIGTERM");
  });
}

// `size` nodes, each with a gateway: { nodes: [{mesh, client, admin}], gateways: [{ws, http}],
// pids(), stop() }.
export async function startCluster(size, { gatewayArgs = [], configOverride = {} } = {}) {
  const folder = mkdtempSync(join(tmpdir(), "matchmesh-sdk-"));
  const configPath = join(folder, "cluster.json");
  writeFileSync(configPath, JSON.stringify({ ...config, ...configOverride }));
  const children = [];
  const nodes = [];
  const gateways = [];
  const pids = { nodes: [], gateways: [] };
  try {
    for (let index = 1; index <= size; ++index) {
      const seeds = nodes.length > 0 ? ["--seeds", nodes[0].mesh] : [];
      const { child, found } = await start(
        join(binaries, "matchmesh"),
        ["--config", configPath, "--id", `node-${index}`, "--mesh-listen", "127.0.0.1:0",
         "--client-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--log-level", "warn",
         ...seeds],
        / ready: mesh (\S+) client (\S+) admin (\S+)/,
      );
      children.push(child);
      pids.nodes.push(child.pid);
      nodes.push({ mesh: found[1], client: found[2], admin: found[3] });
    }
    for (const node of nodes) {
      const { child, found } = await start(
        join(binaries, "matchmesh-gateway"),
        ["--listen", "127.0.0.1:0", "--nodes", node.client, "--admin", nodes.map((n) => n.admin).join(","),
         "--log-level", "warn", ...gatewayArgs],
        /ready: websocket (\S+) http (\S+)/,
      );
      children.push(child);
      pids.gateways.push(child.pid);
      gateways.push({ ws: found[1], http: found[2] });
    }
  } catch (error) {
    await Promise.all(children.map(stopChild));
    rmSync(folder, { recursive: true, force: true });
    throw error;
  }
  return {
    nodes,
    gateways,
    pids: () => pids,
    // Stops everything; throws if a process did not stop cleanly.
    async stop() {
      const endings = await Promise.all(children.map(stopChild));
      rmSync(folder, { recursive: true, force: true });
      const unclean = endings
        .map((ending, index) => [children[index].spawnfile, ending])
        .filter(([, ending]) => ending !== "exit 0");
      if (unclean.length > 0) {
        throw new Error(`processes did not stop cleanly: ${unclean.map(([file, ending]) => `${file} (${ending})`).join(", ")}`);
      }
    },
  };
}

// The WebSocket class: the global one where Node.js has it, else the 'ws' package's.
export async function webSocketClass() {
  return globalThis.WebSocket ?? (await import("ws")).WebSocket;
}
