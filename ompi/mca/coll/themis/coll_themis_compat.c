/* coll_themis_compat.c: the series-dependent functions of coll_themis_compat.h. */
#include "coll_themis_compat.h"

#include <stdio.h>
#include <string.h>

bool themis_info_get(opal_info_t *info, const char *key, char *value, size_t size)
{
    int flag = 0;
    if (0 == size) return false;
    value[0] = '\0';
    if (NULL == info) return false;
#if THEMIS_OMPI_SERIES == 41
    /* Copies at most valuelen characters and ends them with a NUL. */
    char text[OPAL_MAX_INFO_VAL + 1];
    memset(text, 0, sizeof text);
    (void) opal_info_get(info, key, OPAL_MAX_INFO_VAL, text, &flag);
    if (flag) snprintf(value, size, "%s", text);
#else
    opal_cstring_t *text = NULL;
    (void) opal_info_get(info, key, &text, &flag);
    if (flag && NULL != text) snprintf(value, size, "%s", text->string);
    if (NULL != text) OBJ_RELEASE(text);
#endif
    return 0 != flag;
}

/* The filter every subscription of this process uses (one: see the header). */
static themis_info_filter_fn info_filter = NULL;

#if THEMIS_OMPI_SERIES == 41
static char *info_callback(opal_infosubscriber_t *object, char *key, char *value)
{
    (void) object;
    return (char *) info_filter(key, value);
}
#else
static const char *info_callback(opal_infosubscriber_t *object, const char *key,
                                 const char *value)
{
    (void) object;
    return info_filter(key, value);
}
#endif

int themis_info_subscribe(opal_infosubscriber_t *object, const char *key,
                          themis_info_filter_fn filter)
{
    info_filter = filter;
#if THEMIS_OMPI_SERIES == 41
    return opal_infosubscribe_subscribe(object, (char *) key, "", info_callback);
#else
    return opal_infosubscribe_subscribe(object, key, "", info_callback);
#endif
}
