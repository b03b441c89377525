-- What else a session may set that changes a query's values: the text search
-- configuration (to_tsvector(text)), the locale of to_char's TM, L, D and G patterns,
-- the time zone abbreviations text is read with ('IST'), xmlbinary and xmloption. Every cycle, registration and migration evaluates with the values the
-- session that installed (or upgraded) argus had, whoever runs it: a writer set its own
-- before its cycles and changed stored answers (a helper). (settings.PINNED_FROM_INSTALL)
CREATE TABLE argus_catalog.pinned_settings (name text PRIMARY KEY, value text NOT NULL);
INSERT INTO argus_catalog.pinned_settings
SELECT n, current_setting(n)
  FROM unnest(ARRAY['default_text_search_config', 'lc_monetary', 'lc_numeric', 'lc_time',
                    'timezone_abbreviations', 'xmlbinary', 'xmloption']) AS n;
