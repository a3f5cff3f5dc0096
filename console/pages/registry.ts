import type { ComponentType } from 'preact';

/** What a page of the console is: its place in the navigation and what it shows. */
export interface ConsolePage {
  /** The hash path it answers, and every path under it (`/segments` takes `/segments/vip`). */
  path: string;
  title: string;
  /** Shown to operator tokens only (the operations page). */
  operatorOnly?: boolean;
  component: ComponentType<{ path: string }>;
}
