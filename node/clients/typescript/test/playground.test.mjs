// The playground in a real browser: Debian's Chromium, headless, driven by puppeteer-core. It
// starts players from the page, waits for a match with its roster on screen, and leaves a
// screenshot in $MATCHMESH_SCREENSHOT_DIR (the build folder under CTest) for a person to look at.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

import puppeteer from "puppeteer-core";

import { startCluster } from "../testing/cluster.mjs";

const chromium = process.env.MATCHMESH_CHROMIUM ?? "/usr/bin/chromium";
const webRoot = resolve(fileURLToPath(import.meta.url), "../../web");
const screenshots = process.env.MATCHMESH_SCREENSHOT_DIR ?? tmpdir();

let cluster;
let browser;
let profile;

before(async () => {
  cluster = await startCluster(2, { gatewayArgs: ["--web-root", webRoot] });
  profile = mkdtempSync(join(tmpdir(), "matchmesh-chromium-"));
  // Headless, without the sandbox (tests may run as root) and without any of the browser's own
  // network traffic: this machine reaches nothing but loopback.
  browser = await puppeteer.launch({
    executablePath: chromium,
    userDataDir: profile,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
      "--no-first-run", "--disable-background-networking", "--disable-component-update",
      "--disable-sync", "--disable-default-apps"],
  });
});

after(async () => {
  await browser?.close();
  await cluster?.stop();
  if (profile) {
    rmSync(profile, { recursive: true, force: true });
  }
});

test("the playground matches players it starts and shows the roster", async () => {
  const page = await browser.newPage();
  const problems = [];
  page.on("pageerror", (error) => problems.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(message.text());
  });
  await page.setViewport({ width: 1400, height: 800 });
  await page.goto(cluster.gateways[0].http, { waitUntil: "load" });
  // The cluster panel reads both nodes and offers the configured ticket types.
  await page.waitForFunction(() => document.querySelectorAll("#nodes .node").length === 2 &&
    document.querySelector("#type").options.length > 0, { timeout: 15000 });
  await page.select("#type", "1");
  await page.$eval("#count", (input) => { input.value = "4"; });
  await page.click("#go");
  // Four duel players make two matches; every player receives its match's roster.
  await page.waitForFunction(() => document.querySelectorAll(".match.complete").length === 2,
    { timeout: 20000 });
  // And the cluster panel counts them (its metrics are read once a second).
  await page.waitForFunction(() => [...document.querySelectorAll("#waiting tbody tr")]
    .some((row) => row.cells[0].textContent === "1" && Number(row.cells[3].textContent) >= 4),
    { timeout: 10000 });
  mkdirSync(screenshots, { recursive: true });
  const shot = join(screenshots, "playground.png");
  await page.screenshot({ path: shot, fullPage: true });
  console.log(`screenshot: ${shot}`);

  const rosters = await page.$$eval(".match", (cards) => cards.map((card) =>
    [...card.querySelectorAll(".roster tbody tr")].map((row) => row.cells[0].textContent)));
  const players = await page.$$eval("#players tbody tr", (rows) => rows.map((row) => row.cells[0].textContent));
  assert.equal(rosters.length, 2);
  assert.deepEqual(rosters.flat().sort(), [...players].sort());
  for (const roster of rosters) {
    assert.equal(roster.length, 2);
  }
  assert.deepEqual(problems, []);
});
