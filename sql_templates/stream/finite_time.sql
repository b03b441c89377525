-- Event times are finite: 'infinity' would move the stream clock beyond every window.
ALTER TABLE {inbox} ADD CONSTRAINT argus_finite_time CHECK (isfinite({column}))
