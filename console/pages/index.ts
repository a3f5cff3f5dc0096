import { Catalog } from './catalog.js';
import { LiveEvents } from './live-events.js';
import { Operations } from './operations.js';
import { Overview } from './overview.js';
import { Profiles } from './profiles.js';
import type { ConsolePage } from './registry.js';
import { Segments } from './segments/index.js';
import { Webhooks } from './webhooks.js';

/** The console's pages, in the order of the navigation. */
export const PAGES: readonly ConsolePage[] = [
  { path: '/', title: 'Overview', component: Overview },
  { path: '/live', title: 'Live events', component: LiveEvents },
  { path: '/segments', title: 'Segments', component: Segments },
  { path: '/webhooks', title: 'Webhooks', component: Webhooks },
  { path: '/catalog', title: 'Catalog', component: Catalog },
  { path: '/profiles', title: 'People', component: Profiles },
  { path: '/operations', title: 'Operations', component: Operations, operatorOnly: true },
];
