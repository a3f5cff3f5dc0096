/** The error of the last call, read out when it appears. */
export function Alert({ message }: { message: string | null }) {
  if (!message) return null;
  return (
    <p role="alert" class="error">
      {message}
    </p>
  );
}
