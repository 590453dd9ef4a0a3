! A fixed-form FORTRAN 77 style program through include 'mpif.h' (no
! explicit interfaces): statuses, MPI_IN_PLACE, a split communicator,
! strings, MPI_WTIME, a derived type, the MPI-1 MPI_TYPE_STRUCT with
! INTEGER displacements.  Prints "ok f_fixed" on rank 0; a wrong result
! ends the job.
      PROGRAM FFIXED
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER IERR, RANK, NPROC, I, N, SUB, SRANK, SSIZE, SLEN
      INTEGER ISTAT(MPI_STATUS_SIZE), BUF(8), TOT(2), CTG, STRT
      INTEGER BLENS(2), DISPS(2), TYPES(2)
      DOUBLE PRECISION T0, T1, X(3)
      LOGICAL FLAG
      CHARACTER*(MPI_MAX_ERROR_STRING) MSG
      CHARACTER*(MPI_MAX_PROCESSOR_NAME) PNAME
      COMMON /FFX/ RANK

      CALL MPI_INIT(IERR)
      T0 = MPI_WTIME()
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NPROC, IERR)
      CALL MPI_INITIALIZED(FLAG, IERR)
      CALL CHECK(FLAG, 'MPI_INITIALIZED')

!     rank 0 collects one message from each other rank, any order
      IF (RANK .EQ. 0) THEN
         TOT(1) = 0
         DO I = 1, NPROC - 1
            CALL MPI_RECV(BUF, 8, MPI_INTEGER, MPI_ANY_SOURCE, 5,
     &                    MPI_COMM_WORLD, ISTAT, IERR)
            CALL MPI_GET_COUNT(ISTAT, MPI_INTEGER, N, IERR)
            CALL CHECK(N .EQ. ISTAT(MPI_SOURCE), 'COUNT = SOURCE')
            CALL CHECK(BUF(N) .EQ. 10 * ISTAT(MPI_SOURCE), 'DATA')
            TOT(1) = TOT(1) + ISTAT(MPI_SOURCE)
         END DO
         CALL CHECK(TOT(1) .EQ. NPROC * (NPROC - 1) / 2, 'SOURCES')
      ELSE
         DO I = 1, RANK
            BUF(I) = 10 * I
         END DO
         CALL MPI_SEND(BUF, RANK, MPI_INTEGER, 0, 5, MPI_COMM_WORLD,
     &                 IERR)
      END IF

!     in place, on a communicator of the even and of the odd ranks
      CALL MPI_COMM_SPLIT(MPI_COMM_WORLD, MOD(RANK, 2), RANK, SUB,
     &                    IERR)
      CALL MPI_COMM_RANK(SUB, SRANK, IERR)
      CALL MPI_COMM_SIZE(SUB, SSIZE, IERR)
      CALL CHECK(SRANK .EQ. RANK / 2, 'SPLIT RANK')
      TOT(1) = 1
      TOT(2) = RANK
      CALL MPI_ALLREDUCE(MPI_IN_PLACE, TOT, 2, MPI_INTEGER, MPI_SUM,
     &                   SUB, IERR)
      CALL CHECK(TOT(1) .EQ. SSIZE, 'IN PLACE SUM')
      CALL MPI_COMM_FREE(SUB, IERR)

!     a contiguous type of 3 doubles
      CALL MPI_TYPE_CONTIGUOUS(3, MPI_DOUBLE_PRECISION, CTG, IERR)
      CALL MPI_TYPE_COMMIT(CTG, IERR)
      X(1) = RANK
      X(2) = 2 * RANK
      X(3) = 3 * RANK
      CALL MPI_BCAST(X, 1, CTG, NPROC - 1, MPI_COMM_WORLD, IERR)
      CALL CHECK(X(3) .EQ. 3 * (NPROC - 1), 'BCAST OF A DERIVED TYPE')
      CALL MPI_TYPE_FREE(CTG, IERR)

!     MPI-1: MPI_TYPE_STRUCT with INTEGER displacements, MPI_TYPE_EXTENT
      BLENS(1) = 1
      BLENS(2) = 2
      DISPS(1) = 0
      DISPS(2) = 8
      TYPES(1) = MPI_INTEGER
      TYPES(2) = MPI_DOUBLE_PRECISION
      CALL MPI_TYPE_STRUCT(2, BLENS, DISPS, TYPES, STRT, IERR)
      CALL MPI_TYPE_EXTENT(STRT, N, IERR)
      CALL CHECK(N .EQ. 24, 'MPI_TYPE_EXTENT OF A STRUCT')
      CALL MPI_TYPE_FREE(STRT, IERR)

      CALL MPI_ERROR_STRING(MPI_ERR_COMM, MSG, SLEN, IERR)
      CALL CHECK(SLEN .GT. 0 .AND. INDEX(MSG, 'communicator') .GT. 0,
     &           'ERROR STRING')
      CALL MPI_GET_PROCESSOR_NAME(PNAME, SLEN, IERR)
      CALL CHECK(SLEN .EQ. LEN_TRIM(PNAME), 'PROCESSOR NAME')
      T1 = MPI_WTIME()
      CALL CHECK(T1 .GE. T0 .AND. MPI_WTICK() .GT. 0, 'MPI_WTIME')
      CALL MPI_FINALIZE(IERR)
      CALL MPI_FINALIZED(FLAG, IERR)
      IF (RANK .EQ. 0 .AND. FLAG) PRINT '(A)', 'ok f_fixed'
      END

      SUBROUTINE CHECK(COND, WHAT)
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      LOGICAL COND
      CHARACTER*(*) WHAT
      INTEGER RANK, IERR
      COMMON /FFX/ RANK
      IF (.NOT. COND) THEN
         PRINT '(A,I0,A,A)', 'FAILED on rank ', RANK, ': ', WHAT
         CALL MPI_ABORT(MPI_COMM_WORLD, 1, IERR)
      END IF
      END
