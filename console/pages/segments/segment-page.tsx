export function SegmentPage({ segmentId }: { segmentId: string }) {
  return (
    <section>
      <h1>{segmentId}</h1>
    </section>
  );
}
