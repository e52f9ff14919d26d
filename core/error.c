/* error.c - texts and names of the CL_E* codes, from CL_ERRNO_MAP. */
#include "commlab.h"

const char *cl_strerror(int err)
{
    switch (err) {
    case CL_OK:
        return "success";
#define CL__ERRNO_TEXT(name, code, text) \
    case CL_E##name:                     \
        return text;
        CL_ERRNO_MAP(CL__ERRNO_TEXT)
#undef CL__ERRNO_TEXT
    }
    return "unknown error";
}

const char *cl_errname(int err)
{
    switch (err) {
    case CL_OK:
        return "CL_OK";
#define CL__ERRNO_NAME(name, code, text) \
    case CL_E##name:                     \
        return "CL_E" #name;
        CL_ERRNO_MAP(CL__ERRNO_NAME)
#undef CL__ERRNO_NAME
    }
    return "CL_E?";
}
