import { Overview } from './overview.js';
import type { ConsolePage } from './registry.js';
import { Segments } from './segments/index.js';

/** The console's pages, in the order of the navigation. */
export const PAGES: readonly ConsolePage[] = [
  { path: '/', title: 'Overview', component: Overview },
  { path: '/segments', title: 'Segments', component: Segments },
];
