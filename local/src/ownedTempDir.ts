import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A fresh temp dir for an emulator's data that names its owner's PID (`owner.pid`). An owner killed
 * with SIGKILL cannot delete it (its emulator dies with it, see childProcess.ts), so every new one
 * first deletes the dirs of the same prefix whose owner is gone.
 */
export function ownedTempDir(prefix: string): string {
  sweepStaleTempDirs(prefix);
  const dir = mkdtempSync(join(tmpdir(), prefix));
  writeFileSync(join(dir, "owner.pid"), String(process.pid));
  return dir;
}

function sweepStaleTempDirs(prefix: string): void {
  let entries: string[];
  try {
    entries = readdirSync(tmpdir()).filter((e) => e.startsWith(prefix));
  } catch {
    return;
  }
  for (const entry of entries) {
    const dir = join(tmpdir(), entry);
    try {
      const owner = Number(readFileSync(join(dir, "owner.pid"), "utf8"));
      process.kill(owner, 0);
    } catch (error) {
      // ESRCH: the owner is dead. (EPERM: alive, someone else's; a missing file: being created.)
      if ((error as NodeJS.ErrnoException).code === "ESRCH") rmSync(dir, { recursive: true, force: true });
    }
  }
}
