// The playground's engine: Pyodide in this Web Worker runs dgxmm.playground (the jobs engine
// and its store over SQLite in memory). Everything is loaded from /playground/files on the
// page's own server. The worker has one thread: a request that arrives while a job runs
// waits for it, as the spec says of the playground.
import { loadPyodide } from "/playground/files/pyodide.mjs";

const FILES = "/playground/files/";
const TICK_MS = 5000;
let engine = null;
const queue = [];

async function start(zone, ownClock) {
  const manifest = await (await fetch(FILES + "manifest.json")).json();
  // The npm tarball's lock file lists packages that are not served here: pass a lock with
  // none, so nothing is ever looked up elsewhere.
  const lock = {
    info: { abi_version: "2026_0", arch: "wasm32", platform: "emscripten_5_0_3", python: "3.14.2" },
    packages: {},
  };
  const pyodide = await loadPyodide({ indexURL: FILES, lockFileContents: JSON.stringify(lock) });
  await pyodide.loadPackage(manifest.wheels.map((wheel) => FILES + wheel));
  pyodide.globals.set("browser_zone", zone);
  engine = pyodide.runPython(
    "from dgxmm.playground import Playground\nPlayground(browser_zone)"
  );
  // The timer is the worker's own; with ownClock false (the page's ?clock=page) it takes the
  // time from the page, whose clock a test can move.
  setInterval(() => {
    if (ownClock) tick(Date.now(), "worker"); else self.postMessage({ kind: "time?" });
  }, TICK_MS);
  self.postMessage({ kind: "ready", zone, pyodide: manifest.pyodide });
  while (queue.length) answer(queue.shift());
}

function tick(nowMs, source) {
  const ran = engine.tick(Math.round(nowMs * 1000));
  const names = ran.toJs();
  ran.destroy();
  self.postMessage({ kind: "ticked", ran: names, source });
}

function answer(message) {
  const text = engine.handle(message.method, message.path, message.body ?? null,
    Math.round(message.now * 1000));
  self.postMessage({ kind: "answer", id: message.id, ...JSON.parse(text) });
}

self.onmessage = (event) => {
  const message = event.data;
  try {
    if (message.kind === "start") {
      start(message.zone, message.ownClock).catch((error) =>
        self.postMessage({ kind: "failed", message: String(error) }));
    } else if (message.kind === "tick") {
      if (engine) tick(message.now, message.source);
    } else if (message.kind === "request") {
      if (engine) answer(message); else queue.push(message);
    }
  } catch (error) {
    self.postMessage({ kind: "answer", id: message.id, status: 500,
      body: { error: "error", field: null, message: String(error) } });
  }
};
