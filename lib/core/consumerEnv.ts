/**
 * The environment variables a consumer reads, read once when the consumer is created (once per
 * container: handlers are created at module load), and checked then, so a bad deployment fails at
 * init with the variable's name instead of inside the first batch.
 */
import { LAMBDA_ENV } from "../env.ts";
import { ConsumerConfigError } from "./errors.ts";

export interface ConsumerEnv {
  readonly dedupTableName: string | undefined;
  readonly dedupWindowSeconds: number | undefined;
  readonly consumerName: string | undefined;
  readonly dlqUrl: string | undefined;
}

export function readConsumerEnv(
  env: Readonly<Record<string, string | undefined>> = process.env,
): ConsumerEnv {
  const text = (name: string) => (env[name] === "" ? undefined : env[name]);
  const window = text(LAMBDA_ENV.dedupWindowSeconds);
  let dedupWindowSeconds: number | undefined;
  if (window !== undefined) {
    dedupWindowSeconds = Number(window);
    if (!Number.isSafeInteger(dedupWindowSeconds) || dedupWindowSeconds <= 0) {
      throw new ConsumerConfigError(
        `${LAMBDA_ENV.dedupWindowSeconds} must be a whole number of seconds above 0, got '${window}'`,
      );
    }
  }
  return {
    dedupTableName: text(LAMBDA_ENV.dedupTableName),
    dedupWindowSeconds,
    consumerName: text(LAMBDA_ENV.consumerName),
    dlqUrl: text(LAMBDA_ENV.dlqUrl),
  };
}
