import type { ComponentChildren } from 'preact';

/**
 * A table that scrolls in its own box when it is wider than the screen (the page never scrolls
 * sideways at 360 px), with a header cell per column. A column given as `false` is left out, so
 * an "Actions" column can be `canWrite.value && 'Actions'`.
 */
export function Table(props: {
  columns: (string | false)[];
  caption?: ComponentChildren;
  children: ComponentChildren;
}) {
  return (
    <div class="table-wrap">
      <table>
        {props.caption && <caption class="help">{props.caption}</caption>}
        <thead>
          <tr>
            {props.columns
              .filter((column): column is string => column !== false)
              .map((column) => (
                <th key={column} scope="col">
                  {column}
                </th>
              ))}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}

/** A row's action: a quiet button whose accessible name says which row it acts on. */
export function RowAction(props: { label: string; onClick: () => void; children: string }) {
  return (
    <button type="button" class="quiet" aria-label={props.label} onClick={props.onClick}>
      {props.children}
    </button>
  );
}
