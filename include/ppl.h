#ifndef PPL_H
#define PPL_H
#endif
