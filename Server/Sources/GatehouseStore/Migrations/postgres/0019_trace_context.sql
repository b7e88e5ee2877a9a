-- The trace context (W3C traceparent and the request id, as JSON) of the request that queued a
-- mail or a job, so that the worker's span joins that request's trace. NULL with traces off.
ALTER TABLE outbox ADD COLUMN trace_context TEXT;
ALTER TABLE jobs ADD COLUMN trace_context TEXT;
