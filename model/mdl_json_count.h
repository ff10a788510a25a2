/* model/json_count — entry counts of a model JSON checked while its bytes are read, before any
 * parse builds a tree (issue 17, item 7): a hostile file of millions of tensors is refused at
 * the byte where it passes the limit, not after gigabytes of parse. See mdl_json_count.c. */
#ifndef STRATSIM_MDL_JSON_COUNT_H
#define STRATSIM_MDL_JSON_COUNT_H

#include "model/mdl_graph.h"

G_BEGIN_DECLS

/* Entries any container other than the top-level "tensors" and "ops" arrays may hold: the
 * format's own hold at most a few dozen (dims and shapes MDL_MAX_DIMS, inputs MDL_MAX_INPUTS,
 * an op's fields some 15); the rest is headroom for fields the reader ignores (a Hugging Face
 * config.json's id2label map of 1000 classes). */
#define MDL_JSON_MAX_ENTRIES 4096
/* Nesting depth down to which containers are counted (the format nests 5 deep). */
#define MDL_JSON_COUNT_DEPTH 64

typedef struct MdlJsonCount MdlJsonCount;

/* A counter for one JSON text; @origin (copied) prefixes its errors ("model file x.json"). */
MdlJsonCount *mdl_json_count_new(const char *origin);
void mdl_json_count_free(MdlJsonCount *count);

/* Feeds the next @len bytes. FALSE with MDL_ERROR_INVALID, naming the array and the byte
 * offset, once "tensors" passes MDL_MAX_TENSORS entries, "ops" MDL_MAX_OPS, or another
 * container MDL_JSON_MAX_ENTRIES. Malformed JSON passes: the parser judges it. */
gboolean mdl_json_count_feed(MdlJsonCount *count, const char *bytes, gsize len, GError **error);

/* The whole NUL-terminated @text at once (mdl_graph_from_json runs it before parsing). */
gboolean mdl_json_count_text(const char *text, const char *origin, GError **error);

/* Reads model file @path into @text (caller g_free()s) in 64 KiB chunks, counting as it goes:
 * refused on its size (MDL_MAX_JSON_BYTES, before reading), on its counts (as
 * mdl_json_count_feed, as soon as the limit is passed, with only that much read), or on a NUL
 * byte. FALSE with MDL_ERROR_INVALID or MDL_ERROR_PARSE (unreadable). */
gboolean mdl_read_model_json_file(const char *path, char **text, GError **error);

G_END_DECLS

#endif
