-- Perceptual memory (memdb.write.perceive): the rows of memdb.percepts, read and written under the
-- caller's row-level security (tenant and subject set by the store's transaction).

-- name: percept_by_sha256
-- A current memory already made from the same file (same bytes) for this subject.
SELECT p.memory_id
FROM memdb.percepts p
JOIN memdb.memories m ON m.tenant = p.tenant AND m.id = p.memory_id
WHERE p.tenant = %(tenant)s AND p.subject = %(subject)s AND p.sha256 = %(sha256)s
  AND m.valid_to IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())
LIMIT 1;

-- name: insert_percept
INSERT INTO memdb.percepts (tenant, memory_id, subject, modality, state, sha256, mime,
                            size_bytes, width, height, ref, data, thumbnail, ocr_text, caption,
                            exif, taken_at, latitude, longitude)
VALUES (%(tenant)s, %(memory_id)s, %(subject)s, %(modality)s, %(state)s, %(sha256)s, %(mime)s,
        %(size_bytes)s, %(width)s, %(height)s, %(ref)s, %(data)s, %(thumbnail)s, %(ocr_text)s,
        %(caption)s, %(exif)s, %(taken_at)s, %(latitude)s, %(longitude)s)
ON CONFLICT (tenant, memory_id) DO NOTHING
RETURNING memory_id;

-- name: get_percept
-- A perceptual memory's source description, without its bytes (see percept_data).
SELECT p.memory_id, p.subject, p.modality, p.state, encode(p.sha256, 'hex') AS sha256, p.mime,
       p.size_bytes, p.width, p.height, p.ref, p.data IS NOT NULL AS has_data, p.ocr_text,
       p.caption, p.exif, p.taken_at, p.latitude, p.longitude, p.created_at
FROM memdb.percepts p
WHERE p.tenant = %(tenant)s AND p.memory_id = %(id)s;

-- name: percept_thumbnail
SELECT p.thumbnail FROM memdb.percepts p
WHERE p.tenant = %(tenant)s AND p.memory_id = %(id)s;

-- name: percept_data
SELECT p.data, p.mime FROM memdb.percepts p
WHERE p.tenant = %(tenant)s AND p.memory_id = %(id)s;

-- name: percept_for_transcription
-- A recording's state, bytes (when kept), reference and JSON fields, for the transcribe job.
SELECT p.modality, p.state, p.mime, p.data, p.ref, p.exif
FROM memdb.percepts p
WHERE p.tenant = %(tenant)s AND p.memory_id = %(id)s;

-- name: mark_transcribed
-- A recording transcribed: its transcript and segments; its bytes dropped when they were kept
-- only until then. Only from not_transcribed, so a second run changes nothing.
UPDATE memdb.percepts
SET state = 'ok', ocr_text = %(text)s, exif = %(exif)s,
    data = CASE WHEN %(drop_data)s THEN NULL ELSE data END
WHERE tenant = %(tenant)s AND memory_id = %(id)s AND state = 'not_transcribed'
RETURNING memory_id;

-- name: pending_transcriptions
-- Current recordings not transcribed yet, oldest first.
SELECT p.memory_id
FROM memdb.percepts p
JOIN memdb.memories m ON m.tenant = p.tenant AND m.id = p.memory_id
WHERE p.tenant = %(tenant)s AND p.modality = 'audio' AND p.state = 'not_transcribed'
  AND m.valid_to IS NULL
ORDER BY p.created_at, p.memory_id
LIMIT %(limit)s;
