import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { Table } from '../../components/table.js';

export interface MemberCountPoint {
  at: string;
  member_count: number;
  change: number;
}

/** A colour of the theme (styles.css), for the canvas, which CSS does not reach. */
function themeColour(name: string, fallback: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

/**
 * The member count over time: a uPlot chart for the eye (aria-hidden: a canvas says nothing to
 * a screen reader) and the same numbers in a table for everyone.
 */
export function MemberChart({ points }: { points: MemberCountPoint[] }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current;
    if (!element || points.length === 0) return;
    const accent = themeColour('--accent', '#0550ae');
    const muted = themeColour('--muted', '#57606a');
    const axis = { stroke: muted, grid: { stroke: themeColour('--line', '#d0d7de') } };
    const times = points.map((point) => Date.parse(point.at) / 1000);
    const first = times[0] as number;
    const last = times.at(-1) as number;
    const chart = new uPlot(
      {
        width: Math.max(240, element.clientWidth),
        height: 220,
        legend: { show: false },
        scales: {
          // One change (or several in one second) still gets an hour either side to sit in.
          x: {
            time: true,
            auto: false,
            range: [first - (first === last ? 3600 : 0), last + (first === last ? 3600 : 0)],
          },
          y: { range: (_plot, _min, max) => [0, Math.max(1, max * 1.1)] },
        },
        series: [{}, { label: 'Members', stroke: accent, width: 2, points: { show: true } }],
        axes: [axis, axis],
      },
      [times, points.map((point) => point.member_count)],
      element,
    );
    const resize = () => chart.setSize({ width: Math.max(240, element.clientWidth), height: 220 });
    addEventListener('resize', resize);
    return () => {
      removeEventListener('resize', resize);
      chart.destroy();
    };
  }, [points]);

  if (points.length === 0)
    return <p>The membership has not changed yet: there is nothing to chart.</p>;
  const recent = points.slice(-20).reverse();
  return (
    <>
      <div class="chart" ref={box} aria-hidden="true" />
      <Table
        caption={`Member count after each change, newest first${
          points.length > recent.length ? ` (the last ${recent.length} of ${points.length})` : ''
        }`}
        columns={['When', 'Members', 'Change']}
      >
        {recent.map((point) => (
          <tr key={point.at}>
            <td>{new Date(point.at).toLocaleString()}</td>
            <td class="number">{point.member_count}</td>
            <td class="number">{point.change > 0 ? `+${point.change}` : point.change}</td>
          </tr>
        ))}
      </Table>
    </>
  );
}
