-- Issue 38 (behaviour in the rule): a segment's event conditions ("did order_placed at least 2
-- times in 30 days where properties.total >= 50") are computed as metric definitions created on
-- the segment's behalf (docs/decisions.md, "Behaviour in a rule"). Such a definition filters the
-- events it reads with `event_filter`, a list of property conditions that must all hold;
-- `segment_behaviours` names the segments each one is computed for, and it goes with the last.
ALTER TABLE metric_definitions ADD COLUMN event_filter VARCHAR;
ALTER TABLE metric_definitions ADD COLUMN for_segments BOOLEAN;
UPDATE metric_definitions SET for_segments = false;

CREATE TABLE segment_behaviours (
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  segment_id VARCHAR NOT NULL,
  metric_name VARCHAR NOT NULL,
  PRIMARY KEY (tenant_id, workspace_id, segment_id, metric_name)
);

-- One condition on an event's property: its JSON path (built from a validated `properties.<field>`
-- path), the operator, and the value in the field of its type (a number, a string, a list of
-- strings, or a boolean for `exists` and for `eq`/`ne` on a boolean).
CREATE TYPE event_condition AS STRUCT(json_path VARCHAR, op VARCHAR, number DOUBLE, text VARCHAR, texts VARCHAR[], flag BOOLEAN);

-- A property's value as a number, a string or a boolean, NULL when it is of another JSON type:
-- a condition compares like with like, so "5" is not 5.
CREATE MACRO event_property_number(x) AS CASE WHEN json_type(x) IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN TRY_CAST(x AS DOUBLE) END;
CREATE MACRO event_property_text(x) AS CASE WHEN json_type(x) = 'VARCHAR' THEN json_extract_string(x, '$') END;
CREATE MACRO event_property_flag(x) AS CASE WHEN json_type(x) = 'BOOLEAN' THEN TRY_CAST(x AS BOOLEAN) END;
CREATE MACRO event_property_equals(x, c) AS CASE
  WHEN c.number IS NOT NULL THEN event_property_number(x) = c.number
  WHEN c.text IS NOT NULL THEN event_property_text(x) = c.text
  ELSE event_property_flag(x) = c.flag END;
-- As metric comparisons read a missing value: `ne` and `not_in` hold for an event without the
-- property, every other operator but `exists` does not.
CREATE MACRO event_property_matches(x, c) AS coalesce(CASE c.op
  WHEN 'exists' THEN (x IS NOT NULL AND json_type(x) <> 'NULL') = c.flag
  WHEN 'eq' THEN event_property_equals(x, c)
  WHEN 'ne' THEN NOT coalesce(event_property_equals(x, c), false)
  WHEN 'gt' THEN event_property_number(x) > c.number
  WHEN 'gte' THEN event_property_number(x) >= c.number
  WHEN 'lt' THEN event_property_number(x) < c.number
  WHEN 'lte' THEN event_property_number(x) <= c.number
  WHEN 'in' THEN list_contains(c.texts, event_property_text(x))
  WHEN 'not_in' THEN NOT coalesce(list_contains(c.texts, event_property_text(x)), false)
  WHEN 'contains' THEN contains(event_property_text(x), c.text)
  END, false);
-- Whether an event's properties meet every condition of a definition's filter (none: every event).
CREATE MACRO event_properties_match(properties, conditions) AS
  conditions IS NULL OR list_bool_and(list_transform(conditions, c -> event_property_matches(json_extract(properties, c.json_path), c)));
