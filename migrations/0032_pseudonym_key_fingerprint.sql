-- The fingerprint of the key an environment's pseudonyms are made under (issue 39): every instance
-- must use the same key, or one person gets two pseudonyms and their cases come apart. The first
-- erasure records HMAC-SHA-256(key, "pseudonym-key-fingerprint"), which tells nothing of the key or
-- of any chat id; an erasure under another key is refused (src/admin/subjects/subject-key.ts).
create table pseudonym_key_fingerprint (
  singleton boolean primary key default true check (singleton),
  fingerprint text not null check (fingerprint ~ '^[0-9a-f]{64}$'),
  created_at timestamptz not null default now()
);
