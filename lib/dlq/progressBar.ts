import type { MoveProgress } from "./filters.ts";

/**
 * A one-line progress bar on stderr (redrawn in place on a TTY, a line per update otherwise, at
 * most every 500 ms), so stdout stays clean for the JSON summary.
 */
export function progressBar(label: string, stream: NodeJS.WriteStream = process.stderr) {
  let last = 0;
  const render = (p: MoveProgress) => {
    const width = 30;
    const total = Math.max(p.total, p.seen, 1);
    const filled = Math.round((p.seen / total) * width);
    const bar = `${"█".repeat(filled)}${"░".repeat(width - filled)}`;
    return `${label} [${bar}] ${p.seen}/${p.total || "?"}  moved ${p.moved}  skipped ${p.skipped}  failed ${p.failed}`;
  };
  return {
    update(p: MoveProgress) {
      const now = Date.now();
      if (now - last < 500 && p.seen < p.total) return;
      last = now;
      if (stream.isTTY) stream.write(`\r${render(p)}`);
      else stream.write(`${render(p)}\n`);
    },
    done(p: MoveProgress) {
      stream.write(stream.isTTY ? `\r${render(p)}\n` : `${render(p)}\n`);
    },
  };
}
