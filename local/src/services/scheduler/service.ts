/** EventBridge schedules (`AWS::Events::Rule` with a rate or cron target on a function). */
import type { LocalService } from "../localService.ts";
import { materialiseSchedule, ruleArn } from "./materialise.ts";

export const schedulerService: LocalService = {
  name: "scheduler",
  deferred: {
    "AWS::Events::Rule": {
      placeholder: (id, s) => ({ ref: `${s.prefix}${s.stackName}-${id}`, attrs: { Arn: ruleArn(id, s) } }),
      resolve: materialiseSchedule,
    },
  },
};
