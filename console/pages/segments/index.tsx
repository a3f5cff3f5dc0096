import './segments.css';
import { routeParts } from '../../router.js';
import { SegmentBuilder } from './builder.js';
import { SegmentList } from './list.js';
import { SegmentPage } from './segment-page.js';

/** `#/segments`, `#/segments/new` and `#/segments/<id>` (`new` is not a valid segment id's page). */
export function Segments({ path }: { path: string }) {
  const parts = routeParts('/segments', path) ?? [];
  if (parts.length === 0) return <SegmentList />;
  if (parts[0] === 'new' && parts.length === 1) return <SegmentBuilder />;
  if (parts.length === 1) return <SegmentPage segmentId={parts[0] as string} />;
  return <p>No page here.</p>;
}
