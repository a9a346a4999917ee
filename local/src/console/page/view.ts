/** What every view of the page is: it draws into its element, and hears the live events while it is shown. */
import type { OverviewDto } from "../consoleApi.ts";
import type { LiveListener } from "./api.ts";

export interface ViewContext {
  readonly overview: OverviewDto;
  readonly params: readonly string[];
}

export interface View {
  /** Called with each live event while the view is shown. */
  readonly onEvent?: LiveListener;
  readonly dispose?: () => void;
}

export type ViewFactory = (el: HTMLElement, ctx: ViewContext) => View | Promise<View>;
