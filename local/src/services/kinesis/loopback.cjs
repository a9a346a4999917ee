/**
 * Preloaded into kinesis-local (`node --require loopback.cjs main.js`): kinesis-mock binds its two
 * listeners to the wildcard address "0.0.0.0" hard-coded in its build (no setting changes it), so
 * this wraps `net.Server.prototype.listen` to bind 127.0.0.1 instead, on a port the OS picks, and
 * prints `KINESIS_LOCAL_LISTENING <requested port> 127.0.0.1:<port>` for each listener so the
 * parent knows which is the plain one. With KINESIS_LOCAL_KEEP_PORT=1 (LocalStack's Kinesis, which
 * picks the port itself) the requested port is kept and only the host changes. It also exits when its stdin closes (the parent died), as
 * every emulator child of the local runtime does (childProcess.ts).
 */
"use strict";
const net = require("node:net");

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function loopbackListen(...args) {
  const callback = typeof args.at(-1) === "function" ? args.pop() : undefined;
  const first = args[0];
  const requested =
    typeof first === "object" && first !== null ? Number(first.port ?? 0) : Number(first ?? 0);
  this.once("listening", () => {
    const a = this.address();
    process.stdout.write(`KINESIS_LOCAL_LISTENING ${requested} 127.0.0.1:${a.port}\n`);
  });
  const port = process.env.KINESIS_LOCAL_KEEP_PORT === "1" ? requested : 0;
  return listen.call(this, { port, host: "127.0.0.1" }, callback);
};

// Only when our runtime started it (its stdin is our pipe); LocalStack's child keeps its own stdin.
if (process.env.KINESIS_LOCAL_KEEP_PORT !== "1") {
  process.stdin.on("end", () => process.exit(0));
  process.stdin.resume();
}
