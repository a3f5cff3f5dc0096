import { LiveEvents } from './live-events.js';
import { Overview } from './overview.js';
import type { ConsolePage } from './registry.js';

/** The console's pages, in the order of the navigation. */
export const PAGES: readonly ConsolePage[] = [
  { path: '/', title: 'Overview', component: Overview },
  { path: '/live', title: 'Live events', component: LiveEvents },
];
