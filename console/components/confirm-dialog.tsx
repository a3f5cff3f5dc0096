import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef } from 'preact/hooks';

/**
 * Asks before a change that cannot be undone, naming what it touches (a native modal `<dialog>`:
 * focus stays inside, Escape cancels). Without `confirmLabel` there is nothing to confirm: the
 * dialog only says why the change cannot be made, and closes.
 */
export function ConfirmDialog(props: {
  title: string;
  children: ComponentChildren;
  confirmLabel: string | null;
  busy: boolean;
  failure: string | null;
  onConfirm: () => void;
  /** The dialog was closed without confirming (Cancel, Close or Escape). */
  onClose: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    if (dialog.current && !dialog.current.open) dialog.current.showModal();
  }, []);
  return (
    <dialog ref={dialog} class="confirm" aria-labelledby={titleId} onClose={props.onClose}>
      <h2 id={titleId}>{props.title}</h2>
      {props.children}
      {props.failure && (
        <p role="alert" class="error">
          {props.failure}
        </p>
      )}
      <div class="actions">
        {props.confirmLabel && (
          <button type="button" class="danger" disabled={props.busy} onClick={props.onConfirm}>
            {props.confirmLabel}
          </button>
        )}
        <button type="button" class="quiet" onClick={() => dialog.current?.close()}>
          {props.confirmLabel ? 'Cancel' : 'Close'}
        </button>
      </div>
    </dialog>
  );
}
