/* Stand-in for an MPI implementation's mpi.h: the calls SMI's utils/smi_utils.hpp and stencilmap's
   host use (stencilmap tests; declarations only). */
#pragma once
typedef int MPI_Comm;
#define MPI_COMM_WORLD ((MPI_Comm)0x44000000)
#define MPI_SUCCESS 0
#define MPI_MAX_ERROR_STRING 512
int MPI_Init(int* argc, char*** argv);
int MPI_Finalize(void);
int MPI_Comm_rank(MPI_Comm comm, int* rank);
int MPI_Comm_size(MPI_Comm comm, int* size);
int MPI_Barrier(MPI_Comm comm);
int MPI_Error_string(int errorcode, char* string, int* resultlen);
